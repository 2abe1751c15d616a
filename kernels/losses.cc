#include "kernels/losses.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace ringwork {

absl::StatusOr<float> SoftmaxCrossEntropy(const float* logits, const int32_t* labels, int64_t batch,
                                          int64_t classes, float* probs, float* dlogits) {
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
    total += static_cast<double>(log_sum - (row[label] - max));
    if (probs != nullptr || dlogits != nullptr) {
      const float inv = 1.0f / sum;
      for (int64_t c = 0; c < classes; ++c) {
        const float p = std::exp(row[c] - max) * inv;
        if (probs != nullptr) probs[b * classes + c] = p;
        if (dlogits != nullptr) dlogits[b * classes + c] = (p - (c == label ? 1.f : 0.f)) * scale;
      }
    }
  }
  return static_cast<float>(total / static_cast<double>(batch));
}

float MeanSquaredError(const float* pred, const float* target, int64_t count, float* dpred) {
  double total = 0;
  const float scale = 2.0f / static_cast<float>(count);
  for (int64_t i = 0; i < count; ++i) {
    const float d = pred[i] - target[i];
    total += static_cast<double>(d) * d;
    if (dpred != nullptr) dpred[i] = d * scale;
  }
  return static_cast<float>(total / static_cast<double>(count));
}

float BinaryCrossEntropy(const float* pred, const float* target, int64_t count, bool from_logits,
                         float* dpred) {
  constexpr float kEpsilon = 1e-7f;
  double total = 0;
  const float scale = 1.0f / static_cast<float>(count);
  for (int64_t i = 0; i < count; ++i) {
    const float t = target[i];
    if (from_logits) {
      // log(1 + exp(-|z|)) + max(z, 0) - z t: stable for any z.
      const float z = pred[i];
      total += std::max(z, 0.f) - z * t + std::log1p(std::exp(-std::fabs(z)));
      if (dpred != nullptr) dpred[i] = (1.f / (1.f + std::exp(-z)) - t) * scale;
    } else {
      const float p = std::clamp(pred[i], kEpsilon, 1.f - kEpsilon);
      total += -(t * std::log(p) + (1.f - t) * std::log(1.f - p));
      if (dpred != nullptr) {
        // Keras clips the prediction: outside the clip range the gradient is 0.
        const bool clipped = pred[i] < kEpsilon || pred[i] > 1.f - kEpsilon;
        dpred[i] = clipped ? 0.f : (p - t) / (p * (1.f - p)) * scale;
      }
    }
  }
  return static_cast<float>(total / static_cast<double>(count));
}

}  // namespace ringwork
