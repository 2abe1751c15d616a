#include "kernels/optimizers.h"

#include <cmath>

namespace ringwork {

// The AVX-512 and AVX2 clones are chosen at load time on CPUs that have them.
#if defined(__SANITIZE_THREAD__)
#define RW_CLONES
#else
#define RW_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif

RW_CLONES void SgdUpdate(const SgdOptions& o, float* __restrict param, const float* __restrict grad,
               float* __restrict velocity, int64_t count) {
  const float lr = o.learning_rate;
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

RW_CLONES void AdamUpdate(const AdamOptions& o, int64_t step, float* __restrict param,
                          const float* __restrict grad, float* __restrict m,
                          float* __restrict v, int64_t count) {
  const double t = static_cast<double>(step);
  const float lr_t = static_cast<float>(o.learning_rate * std::sqrt(1.0 - std::pow(o.beta2, t)) /
                                        (1.0 - std::pow(o.beta1, t)));
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

}  // namespace ringwork
