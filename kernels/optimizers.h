// Parameter updates with Keras' formulas, over flat float32 arrays (parameters,
// gradients and optimizer state stay float32, also in bfloat16 training).
//
//   std::vector<float> w(100), g(100), m(100), v(100);
//   AdamUpdate({.learning_rate = 1e-3f}, /*step=*/1, w.data(), g.data(), m.data(), v.data(), 100);
//
//   SGD:   v = momentum v - lr g;  p += v               (nesterov: p += momentum v - lr g)
//          without momentum: p -= lr g
//          with weight decay: p -= lr * weight_decay * p first (Keras 3)
//   Adam:  m += (1 - b1)(g - m);  v += (1 - b2)(g^2 - v)
//          p -= lr sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)      (t from 1)
//   AdamW: Adam, after p -= lr * weight_decay * p (decoupled decay)
//   RMSprop: v = rho v + (1 - rho) g^2;  step = lr g / sqrt(v + eps)
//          p -= step   (momentum: m = momentum m + step; p -= m)
//   Adagrad: a += g^2 (a starts at initial_accumulator_value);  p -= lr g / sqrt(a + eps)
//   (every one: p -= lr * weight_decay * p first when weight_decay > 0, Keras 3)
#ifndef RINGWORK_KERNELS_OPTIMIZERS_H_
#define RINGWORK_KERNELS_OPTIMIZERS_H_

#include <cstdint>

namespace ringwork {

struct SgdOptions {
  float learning_rate = 0.01f;
  float momentum = 0.0f;
  bool nesterov = false;
  float weight_decay = 0.0f;  // Decoupled: p -= lr * weight_decay * p first.
};

// `velocity` may be null when momentum is 0.
void SgdUpdate(const SgdOptions& options, float* param, const float* grad, float* velocity,
               int64_t count);

struct AdamOptions {
  float learning_rate = 0.001f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-7f;
  float weight_decay = 0.0f;  // AdamW when > 0.
};

// `step` counts updates from 1.
void AdamUpdate(const AdamOptions& options, int64_t step, float* param, const float* grad, float* m,
                float* v, int64_t count);

struct RmspropOptions {
  float learning_rate = 0.001f;
  float rho = 0.9f;
  float momentum = 0.0f;
  float epsilon = 1e-7f;
  float weight_decay = 0.0f;
};

// `momentum_buffer` may be null when momentum is 0.
void RmspropUpdate(const RmspropOptions& options, float* param, const float* grad, float* velocity,
                   float* momentum_buffer, int64_t count);

struct AdagradOptions {
  float learning_rate = 0.001f;
  float epsilon = 1e-7f;
  float weight_decay = 0.0f;
};

// `accumulator` starts at Keras' initial_accumulator_value (0.1), not 0.
void AdagradUpdate(const AdagradOptions& options, float* param, const float* grad,
                   float* accumulator, int64_t count);

}  // namespace ringwork

#endif  // RINGWORK_KERNELS_OPTIMIZERS_H_
