// RMSprop and Adagrad updates (kernels/optimizers.h), per instruction set as the
// others in optimizers.cc: element-wise loops, no fused multiply-add
// (-ffp-contract=off), correctly rounded sqrt and division, so every variant
// gives the same bits.
#include <cmath>

#include "kernels/optimizers.h"
#include "kernels/optimizers_isa.h"

namespace ringwork {
namespace {

__attribute__((always_inline)) inline void RmspropLoop(const RmspropOptions& o,
                                                       float* __restrict param,
                                                       const float* __restrict grad,
                                                       float* __restrict velocity,
                                                       float* __restrict momentum, int64_t count) {
  const float lr = o.learning_rate, rho = o.rho, one_minus_rho = 1.f - o.rho;
  const float keep = 1.f - lr * o.weight_decay;
  for (int64_t i = 0; i < count; ++i) {
    param[i] *= keep;
    const float g = grad[i];
    velocity[i] = rho * velocity[i] + one_minus_rho * (g * g);
    const float step = lr * g / std::sqrt(velocity[i] + o.epsilon);
    if (momentum != nullptr) {
      momentum[i] = o.momentum * momentum[i] + step;
      param[i] -= momentum[i];
    } else {
      param[i] -= step;
    }
  }
}

__attribute__((always_inline)) inline void AdagradLoop(const AdagradOptions& o,
                                                       float* __restrict param,
                                                       const float* __restrict grad,
                                                       float* __restrict accumulator,
                                                       int64_t count) {
  const float lr = o.learning_rate, keep = 1.f - lr * o.weight_decay;
  for (int64_t i = 0; i < count; ++i) {
    param[i] *= keep;
    const float g = grad[i];
    accumulator[i] += g * g;
    param[i] -= lr * g / std::sqrt(accumulator[i] + o.epsilon);
  }
}

}  // namespace

namespace optimizer_isa {

__attribute__((target("avx512f"))) void RmspropAvx512(const RmspropOptions& o, float* param,
                                                      const float* grad, float* velocity,
                                                      float* momentum, int64_t count) {
  RmspropLoop(o, param, grad, velocity, momentum, count);
}
__attribute__((target("avx2"))) void RmspropAvx2(const RmspropOptions& o, float* param,
                                                 const float* grad, float* velocity,
                                                 float* momentum, int64_t count) {
  RmspropLoop(o, param, grad, velocity, momentum, count);
}
void RmspropBaseline(const RmspropOptions& o, float* param, const float* grad, float* velocity,
                     float* momentum, int64_t count) {
  RmspropLoop(o, param, grad, velocity, momentum, count);
}
__attribute__((target("avx512f"))) void AdagradAvx512(const AdagradOptions& o, float* param,
                                                      const float* grad, float* accumulator,
                                                      int64_t count) {
  AdagradLoop(o, param, grad, accumulator, count);
}
__attribute__((target("avx2"))) void AdagradAvx2(const AdagradOptions& o, float* param,
                                                 const float* grad, float* accumulator,
                                                 int64_t count) {
  AdagradLoop(o, param, grad, accumulator, count);
}
void AdagradBaseline(const AdagradOptions& o, float* param, const float* grad, float* accumulator,
                     int64_t count) {
  AdagradLoop(o, param, grad, accumulator, count);
}

}  // namespace optimizer_isa

void RmspropUpdate(const RmspropOptions& options, float* param, const float* grad, float* velocity,
                   float* momentum_buffer, int64_t count) {
  static const auto fn = PickForCpu(&optimizer_isa::RmspropAvx512, &optimizer_isa::RmspropAvx2,
                                    &optimizer_isa::RmspropBaseline);
  fn(options, param, grad, velocity, options.momentum != 0.f ? momentum_buffer : nullptr, count);
}

void AdagradUpdate(const AdagradOptions& options, float* param, const float* grad,
                   float* accumulator, int64_t count) {
  static const auto fn = PickForCpu(&optimizer_isa::AdagradAvx512, &optimizer_isa::AdagradAvx2,
                                    &optimizer_isa::AdagradBaseline);
  fn(options, param, grad, accumulator, count);
}

}  // namespace ringwork
