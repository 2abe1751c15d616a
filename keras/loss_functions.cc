#include "keras/loss_functions.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace ringwork {

float ElementwiseLoss(ElementwiseKind kind, const float* output, const float* target, int64_t n,
                      int64_t width, float* grad, const float* weights, float delta) {
  double total = 0;
  for (int64_t b = 0; b < n; ++b) {
    const double w = weights != nullptr ? weights[b] : 1.0;
    double example = 0;
    for (int64_t c = 0; c < width; ++c) {
      const int64_t at = b * width + c;
      const double e = static_cast<double>(output[at]) - target[at];
      double value, slope;
      if (kind == ElementwiseKind::kMeanAbsoluteError) {
        value = std::fabs(e);
        slope = e > 0 ? 1.0 : (e < 0 ? -1.0 : 0.0);
      } else if (std::fabs(e) <= delta) {
        value = 0.5 * e * e;
        slope = e;
      } else {
        value = delta * (std::fabs(e) - 0.5 * delta);
        slope = e > 0 ? delta : -delta;
      }
      if (std::isnan(e)) value = slope = e;  // A NaN stays NaN.
      example += value;
      if (grad != nullptr) grad[at] = static_cast<float>(w * slope / (width * n));
    }
    total += w * example / width;
  }
  return static_cast<float>(total / n);
}

float CategoricalCrossentropy(const float* output, const float* target, int64_t n, int64_t width,
                              bool from_logits, float label_smoothing, float* grad,
                              const float* weights) {
  constexpr double kEpsilon = 1e-7;
  std::vector<double> y(static_cast<size_t>(width)), q(y.size());
  double total = 0;
  for (int64_t b = 0; b < n; ++b) {
    const double w = weights != nullptr ? weights[b] : 1.0;
    const float* row = output + b * width;
    double y_sum = 0;
    for (int64_t c = 0; c < width; ++c) {
      y[c] = target[b * width + c] * (1.0 - label_smoothing) + label_smoothing / width;
      y_sum += y[c];
    }
    double example = 0;
    if (from_logits) {
      // log softmax: z - max - log(sum e^(z - max)); gradient softmax sum(y) - y.
      const double largest = *std::max_element(row, row + width);
      double sum = 0;
      for (int64_t c = 0; c < width; ++c) sum += std::exp(row[c] - largest);
      const double log_sum = std::log(sum);
      for (int64_t c = 0; c < width; ++c) {
        const double log_q = row[c] - largest - log_sum;
        example -= y[c] * log_q;
        if (grad != nullptr) {
          grad[b * width + c] = static_cast<float>(w / n * (std::exp(log_q) * y_sum - y[c]));
        }
      }
    } else {
      // As Keras (and TF.js) read probabilities: divided by the row's sum, then
      // clipped to [1e-7, 1 - 1e-7]. A clipped term passes no gradient; the others
      // give d/dp_j = Y / S - y_j / p_j (Y: the kept terms' targets, S: the sum).
      double sum = 0;
      for (int64_t c = 0; c < width; ++c) sum += row[c];
      double kept_targets = 0;
      for (int64_t c = 0; c < width; ++c) {
        const double share = row[c] / sum;
        const bool kept = share >= kEpsilon && share <= 1 - kEpsilon;
        q[c] = kept ? 1.0 : 0.0;  // Whether term c is kept, for the gradient.
        example -=
            y[c] * std::log(std::isnan(share) ? share : std::clamp(share, kEpsilon, 1 - kEpsilon));
        if (kept) kept_targets += y[c];
      }
      if (grad != nullptr) {
        for (int64_t c = 0; c < width; ++c) {
          const double own = q[c] != 0 ? y[c] / row[c] : 0.0;
          grad[b * width + c] = static_cast<float>(w / n * (kept_targets / sum - own));
        }
      }
    }
    total += w * example;
  }
  return static_cast<float>(total / n);
}

}  // namespace ringwork
