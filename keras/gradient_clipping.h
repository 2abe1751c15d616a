// Gradient clipping with Keras' optimizer arguments, applied to the averaged
// gradients just before the update (so every replica clips the same values the
// same way):
//
//   ClipGradients(model.trainable_variables(), {.global_clipnorm = 1.0f});
//
// clipnorm rescales each variable's gradient g to g * c / max(|g|, c);
// global_clipnorm rescales all of them by c / max(|(g_1, ..., g_n)|, c), as
// tf.clip_by_global_norm; clipvalue clamps every element to [-c, c]. 0: off; at
// most one of them is set.
// Norms are sums of exact double products in a fixed order: the same bits on every
// CPU, with or without fused multiply-adds.
#ifndef RINGWORK_KERAS_GRADIENT_CLIPPING_H_
#define RINGWORK_KERAS_GRADIENT_CLIPPING_H_

#include <vector>

#include "absl/status/status.h"
#include "strategy/variable.h"

namespace ringwork {

struct GradientClipping {
  float clipnorm = 0;
  float global_clipnorm = 0;
  float clipvalue = 0;

  bool active() const { return clipnorm > 0 || global_clipnorm > 0 || clipvalue > 0; }
  // Each >= 0 and finite; at most one set.
  absl::Status Validate() const;
};

void ClipGradients(const std::vector<Variable*>& variables, const GradientClipping& clipping);

// The L2 norm of the gradients of `variables` together.
double GlobalGradientNorm(const std::vector<Variable*>& variables);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_GRADIENT_CLIPPING_H_
