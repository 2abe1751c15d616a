#include "keras/losses.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "kernels/losses.h"

namespace ringwork {

absl::StatusOr<Loss> Loss::Create(const LossSpec& spec) {
  Loss loss;
  loss.name_ = spec.name;
  loss.from_logits_ = spec.from_logits;
  if (spec.name == "sparse_categorical_crossentropy") {
    loss.kind_ = Kind::kSparseCategoricalCrossentropy;
  } else if (spec.name == "mse" || spec.name == "mean_squared_error") {
    loss.kind_ = Kind::kMeanSquaredError;
  } else if (spec.name == "binary_crossentropy") {
    loss.kind_ = Kind::kBinaryCrossentropy;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown loss \"", spec.name,
                     "\"; expected sparse_categorical_crossentropy, mse or binary_crossentropy"));
  }
  return loss;
}

absl::StatusOr<float> Loss::Compute(const Tensor& output, const std::vector<int32_t>& labels,
                                    Tensor* doutput) const {
  const int64_t batch = output.dim(0);
  const int64_t width = output.size() / batch;
  if (static_cast<int64_t>(labels.size()) != batch) {
    return absl::InvalidArgumentError(
        absl::StrCat("a batch of ", batch, " outputs has ", labels.size(), " labels"));
  }
  if (doutput != nullptr) doutput->Resize(output.shape());
  float* grad = doutput != nullptr ? doutput->data() : nullptr;
  if (kind_ == Kind::kSparseCategoricalCrossentropy) {
    if (!from_logits_) {
      // Probabilities: log(p) with Keras' clipping; the gradient -1/(p batch).
      double total = 0;
      for (int64_t b = 0; b < batch; ++b) {
        if (labels[b] < 0 || labels[b] >= width) {
          return absl::InvalidArgumentError(
              absl::StrCat("label ", labels[b], " of example ", b, " is outside 0..", width - 1));
        }
        const float p = std::max(output[b * width + labels[b]], 1e-7f);
        total -= std::log(p);
        if (grad != nullptr) {
          for (int64_t c = 0; c < width; ++c) grad[b * width + c] = 0;
          grad[b * width + labels[b]] = -1.f / (p * batch);
        }
      }
      return static_cast<float>(total / batch);
    }
    return SoftmaxCrossEntropy(output.data(), labels.data(), batch, width, nullptr, grad);
  }
  if (width != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        name_, " needs one output per example (the label is the target), got ", width));
  }
  std::vector<float> target(labels.begin(), labels.end());
  if (kind_ == Kind::kMeanSquaredError) {
    return MeanSquaredError(output.data(), target.data(), batch, grad);
  }
  return BinaryCrossEntropy(output.data(), target.data(), batch, from_logits_, grad);
}

}  // namespace ringwork
