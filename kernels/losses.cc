#include "kernels/losses.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace ringwork {

absl::StatusOr<float> SoftmaxCrossEntropy(const float* logits, const int32_t* labels, int64_t batch,
                                          int64_t classes, float* probs, float* dlogits,
                                          const float* weights) {
  double total = 0;
  const float scale = 1.0f / static_cast<float>(batch);
  for (int64_t b = 0; b < batch; ++b) {
    const int32_t label = labels[b];
    if (label < 0 || label >= classes) {
      return absl::InvalidArgumentError(absl::StrCat("label ", label, " of example ", b,
                                                     " in the batch is outside 0..", classes - 1,
                                                     " (the model has ", classes, " classes)"));
    }
    const float* row = logits + b * classes;
    const float max = *std::max_element(row, row + classes);
    float sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(row[c] - max);
    const float log_sum = std::log(sum);
    const float w = weights != nullptr ? weights[b] : 1.f;
    total += static_cast<double>(w) * static_cast<double>(log_sum - (row[label] - max));
    if (probs != nullptr || dlogits != nullptr) {
      const float inv = 1.0f / sum;
      for (int64_t c = 0; c < classes; ++c) {
        const float p = std::exp(row[c] - max) * inv;
        if (probs != nullptr) probs[b * classes + c] = p;
        if (dlogits != nullptr) {
          const float g = (p - (c == label ? 1.f : 0.f)) * scale;
          dlogits[b * classes + c] = weights != nullptr ? g * w : g;
        }
      }
    }
  }
  return static_cast<float>(total / static_cast<double>(batch));
}

float MeanSquaredError(const float* pred, const float* target, int64_t count, float* dpred,
                       const float* weights, int64_t per_weight) {
  double total = 0;
  const float scale = 2.0f / static_cast<float>(count);
  for (int64_t i = 0; i < count; ++i) {
    const float d = pred[i] - target[i];
    if (weights == nullptr) {
      total += static_cast<double>(d) * d;
      if (dpred != nullptr) dpred[i] = d * scale;
      continue;
    }
    const float w = weights[i / per_weight];
    total += static_cast<double>(w) * d * d;
    if (dpred != nullptr) dpred[i] = d * scale * w;
  }
  return static_cast<float>(total / static_cast<double>(count));
}

float BinaryCrossEntropy(const float* pred, const float* target, int64_t count, bool from_logits,
                         float* dpred, const float* weights, int64_t per_weight) {
  constexpr float kEpsilon = 1e-7f;
  double total = 0;
  const float scale = 1.0f / static_cast<float>(count);
  for (int64_t i = 0; i < count; ++i) {
    const float t = target[i];
    const float w = weights != nullptr ? weights[i / per_weight] : 1.f;
    if (from_logits) {
      // log(1 + exp(-|z|)) + max(z, 0) - z t: stable for any z.
      const float z = pred[i];
      total += w * (std::max(z, 0.f) - z * t + std::log1p(std::exp(-std::fabs(z))));
      if (dpred != nullptr) {
        const float g = (1.f / (1.f + std::exp(-z)) - t) * scale;
        dpred[i] = weights != nullptr ? g * w : g;
      }
    } else {
      const float p = std::clamp(pred[i], kEpsilon, 1.f - kEpsilon);
      total += -w * (t * std::log(p) + (1.f - t) * std::log(1.f - p));
      if (dpred != nullptr) {
        // Keras clips the prediction: outside the clip range the gradient is 0.
        const bool clipped = pred[i] < kEpsilon || pred[i] > 1.f - kEpsilon;
        const float g = clipped ? 0.f : (p - t) / (p * (1.f - p)) * scale;
        dpred[i] = weights != nullptr ? g * w : g;
      }
    }
  }
  return static_cast<float>(total / static_cast<double>(count));
}

}  // namespace ringwork
