#include "kernels/optimizers.h"

#include <cmath>

#include "kernels/optimizers_isa.h"

namespace ringwork {
namespace {

// The loops, compiled once per instruction set by the variants below. Every
// replica applies the same averaged gradients with these, so they must give the
// same bits on every x86-64 CPU: the library is built with -ffp-contract=off (no
// fused multiply-add in one variant and not in another), the loops are
// element-wise (no reduction whose order could depend on the vector width), and
// sqrt and division are correctly rounded in every instruction set.
__attribute__((always_inline)) inline void SgdLoop(const SgdOptions& o, float* __restrict param,
                                                   const float* __restrict grad,
                                                   float* __restrict velocity, int64_t count) {
  const float lr = o.learning_rate;
  if (o.weight_decay != 0.f) {
    const float keep = 1.f - lr * o.weight_decay;
    for (int64_t i = 0; i < count; ++i) param[i] *= keep;
  }
  if (o.momentum == 0.f || velocity == nullptr) {
    for (int64_t i = 0; i < count; ++i) param[i] -= lr * grad[i];
    return;
  }
  const float mu = o.momentum;
  if (o.nesterov) {
    for (int64_t i = 0; i < count; ++i) {
      velocity[i] = mu * velocity[i] - lr * grad[i];
      param[i] += mu * velocity[i] - lr * grad[i];
    }
  } else {
    for (int64_t i = 0; i < count; ++i) {
      velocity[i] = mu * velocity[i] - lr * grad[i];
      param[i] += velocity[i];
    }
  }
}

// base^exponent by repeated squaring: IEEE multiplications only, so the same bits
// everywhere (libm's pow picks FMA code on some CPUs).
double IntegerPower(double base, int64_t exponent) {
  double result = 1.0;
  while (exponent > 0) {
    if (exponent & 1) result *= base;
    base *= base;
    exponent >>= 1;
  }
  return result;
}

__attribute__((always_inline)) inline void AdamLoop(const AdamOptions& o, int64_t step,
                                                    float* __restrict param,
                                                    const float* __restrict grad,
                                                    float* __restrict m, float* __restrict v,
                                                    int64_t count) {
  const float lr_t =
      static_cast<float>(o.learning_rate * std::sqrt(1.0 - IntegerPower(o.beta2, step)) /
                         (1.0 - IntegerPower(o.beta1, step)));
  const float one_minus_b1 = 1.f - o.beta1, one_minus_b2 = 1.f - o.beta2;
  // (1 - lr * wd) p: AdamW's decoupled decay; a no-op factor of 1 for Adam.
  const float keep = 1.f - o.learning_rate * o.weight_decay;
  for (int64_t i = 0; i < count; ++i) {
    param[i] *= keep;
    const float g = grad[i];
    m[i] += one_minus_b1 * (g - m[i]);
    v[i] += one_minus_b2 * (g * g - v[i]);
    param[i] -= lr_t * m[i] / (std::sqrt(v[i]) + o.epsilon);
  }
}

}  // namespace

namespace optimizer_isa {

__attribute__((target("avx512f"))) void SgdAvx512(const SgdOptions& o, float* param,
                                                  const float* grad, float* velocity,
                                                  int64_t count) {
  SgdLoop(o, param, grad, velocity, count);
}
__attribute__((target("avx2"))) void SgdAvx2(const SgdOptions& o, float* param, const float* grad,
                                             float* velocity, int64_t count) {
  SgdLoop(o, param, grad, velocity, count);
}
void SgdBaseline(const SgdOptions& o, float* param, const float* grad, float* velocity,
                 int64_t count) {
  SgdLoop(o, param, grad, velocity, count);
}

__attribute__((target("avx512f"))) void AdamAvx512(const AdamOptions& o, int64_t step, float* param,
                                                   const float* grad, float* m, float* v,
                                                   int64_t count) {
  AdamLoop(o, step, param, grad, m, v, count);
}
__attribute__((target("avx2"))) void AdamAvx2(const AdamOptions& o, int64_t step, float* param,
                                              const float* grad, float* m, float* v,
                                              int64_t count) {
  AdamLoop(o, step, param, grad, m, v, count);
}
void AdamBaseline(const AdamOptions& o, int64_t step, float* param, const float* grad, float* m,
                  float* v, int64_t count) {
  AdamLoop(o, step, param, grad, m, v, count);
}

}  // namespace optimizer_isa

void SgdUpdate(const SgdOptions& options, float* param, const float* grad, float* velocity,
               int64_t count) {
  static const auto fn =
      PickForCpu(&optimizer_isa::SgdAvx512, &optimizer_isa::SgdAvx2, &optimizer_isa::SgdBaseline);
  fn(options, param, grad, velocity, count);
}

void AdamUpdate(const AdamOptions& options, int64_t step, float* param, const float* grad, float* m,
                float* v, int64_t count) {
  static const auto fn = PickForCpu(&optimizer_isa::AdamAvx512, &optimizer_isa::AdamAvx2,
                                    &optimizer_isa::AdamBaseline);
  fn(options, step, param, grad, m, v, count);
}

}  // namespace ringwork
