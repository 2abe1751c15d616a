#include "keras/losses.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "keras/custom_objects.h"
#include "keras/loss_functions.h"
#include "kernels/losses.h"

namespace ringwork {

namespace {

const std::map<std::string, Loss::Kind>& BuiltInLosses() {
  static const auto* kinds = new std::map<std::string, Loss::Kind>{
      {"sparse_categorical_crossentropy", Loss::Kind::kSparseCategoricalCrossentropy},
      {"mse", Loss::Kind::kMeanSquaredError},
      {"mean_squared_error", Loss::Kind::kMeanSquaredError},
      {"binary_crossentropy", Loss::Kind::kBinaryCrossentropy},
      {"mae", Loss::Kind::kMeanAbsoluteError},
      {"mean_absolute_error", Loss::Kind::kMeanAbsoluteError},
      {"huber", Loss::Kind::kHuber},
      {"categorical_crossentropy", Loss::Kind::kCategoricalCrossentropy},
  };
  return *kinds;
}

}  // namespace

bool Loss::IsBuiltIn(const std::string& name) { return BuiltInLosses().count(name) > 0; }

absl::StatusOr<Loss> Loss::Create(const LossSpec& spec) {
  Loss loss;
  loss.name_ = spec.name;
  loss.from_logits_ = spec.from_logits;
  const auto built_in = BuiltInLosses().find(spec.name);
  if (built_in != BuiltInLosses().end()) {
    loss.kind_ = built_in->second;
  } else if ((loss.custom_ = FindLoss(spec.name)) != nullptr) {
    loss.kind_ = Kind::kCustom;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown loss \"", spec.name,
        "\"; expected sparse_categorical_crossentropy, categorical_crossentropy, "
        "binary_crossentropy, mse, mae, huber or a loss registered with RegisterLoss"));
  }
  if (!(spec.label_smoothing >= 0 && spec.label_smoothing <= 1) || !(spec.delta > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(spec.name, ": label_smoothing must be in [0, 1] and delta positive, got ",
                     spec.label_smoothing, " and ", spec.delta));
  }
  loss.label_smoothing_ = spec.label_smoothing;
  loss.delta_ = spec.delta;
  return loss;
}

absl::StatusOr<float> Loss::Compute(const Tensor& output, const std::vector<int32_t>& labels,
                                    Tensor* doutput) const {
  Batch batch;
  batch.labels = labels;
  return Compute(output, batch, doutput);
}

absl::StatusOr<float> Loss::Compute(const Tensor& output, const Batch& batch,
                                    Tensor* doutput) const {
  const int64_t n = output.dim(0);
  const int64_t width = output.size() / std::max<int64_t>(n, 1);
  const std::vector<int32_t>& labels = batch.labels;
  const bool numbers = batch.targets.rank() > 0;
  const float* weights = batch.weights.empty() ? nullptr : batch.weights.data();
  if (weights != nullptr && static_cast<int64_t>(batch.weights.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("a batch of ", n, " outputs has ", batch.weights.size(), " sample weights"));
  }
  if (!numbers && static_cast<int64_t>(labels.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("a batch of ", n, " outputs has ", labels.size(), " labels"));
  }
  if (doutput != nullptr) doutput->Resize(output.shape());
  float* grad = doutput != nullptr ? doutput->data() : nullptr;
  if (kind_ == Kind::kCustom) return ComputeCustom(output, batch, doutput);
  if (kind_ == Kind::kSparseCategoricalCrossentropy) {
    if (output.rank() > 2) {
      // One class id per example: a softmax over every value of a [.., classes]
      // output would train silently on nothing meaningful (Keras refuses it too).
      return absl::InvalidArgumentError(absl::StrCat(
          name_,
          " takes one class id per example, so each example's output must be a vector "
          "of class scores; this output has shape ",
          ShapeString(Shape(output.shape().begin() + 1, output.shape().end())),
          " (Dense acts on the last axis, as Keras': put a Flatten or a global pooling before "
          "the last Dense, or give it flatten_input)"));
    }
    if (numbers) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, " takes integer class ids; the target holds numbers of shape ",
                       ShapeString(batch.targets.shape()),
                       " (mean_squared_error or binary_crossentropy take "
                       "those)"));
    }
    if (!from_logits_) {
      // Probabilities, as Keras reads them (TF.js): each clipped to [1e-7, 1 - 1e-7],
      // the row divided by its sum, the label's clipped again; -log of it. The
      // gradient reaches every class left unclipped (w/n (1/sum - [c = label]/p)),
      // none when the label's share was clipped; a NaN stays NaN.
      constexpr float kEpsilon = 1e-7f;
      double total = 0;
      for (int64_t b = 0; b < n; ++b) {
        if (labels[b] < 0 || labels[b] >= width) {
          return absl::InvalidArgumentError(
              absl::StrCat("label ", labels[b], " of example ", b, " is outside 0..", width - 1));
        }
        const float w = weights != nullptr ? weights[b] : 1.f;
        const float* row = output.data() + b * width;
        auto clip = [&](float p) { return std::clamp(p, kEpsilon, 1.f - kEpsilon); };
        double sum = 0;
        for (int64_t c = 0; c < width; ++c) sum += clip(row[c]);
        const double p = clip(row[labels[b]]);
        const double q = p / sum;
        const bool clipped = !(q >= kEpsilon && q <= 1.0 - kEpsilon);
        total -= w * std::log(std::isnan(q) ? q : std::clamp(q, 1e-7, 1.0 - 1e-7));
        if (grad != nullptr) {
          for (int64_t c = 0; c < width; ++c) {
            const bool kept = row[c] >= kEpsilon && row[c] <= 1.f - kEpsilon;
            grad[b * width + c] =
                clipped || !kept
                    ? 0.f
                    : static_cast<float>(w / n * (1.0 / sum - (c == labels[b] ? 1.0 / p : 0.0)));
          }
        }
      }
      return static_cast<float>(total / n);
    }
    return SoftmaxCrossEntropy(output.data(), labels.data(), n, width, nullptr, grad, weights);
  }
  if (kind_ == Kind::kCategoricalCrossentropy && !numbers) {
    return absl::InvalidArgumentError(absl::StrCat(
        name_,
        " takes one-hot (or soft) float targets of the output's shape; these are class "
        "ids (sparse_categorical_crossentropy takes those)"));
  }
  std::vector<float> from_labels;
  const float* target = nullptr;
  if (numbers) {
    if (batch.targets.size() != output.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          name_, ": targets of shape ", ShapeString(batch.targets.shape()),
          " for outputs of shape ", ShapeString(output.shape()), " (one target per output)"));
    }
    target = batch.targets.data();
  } else {
    if (width != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          name_, " needs one output per example (the label is the target), got ", width));
    }
    from_labels.assign(labels.begin(), labels.end());
    target = from_labels.data();
  }
  if (kind_ == Kind::kMeanSquaredError) {
    return MeanSquaredError(output.data(), target, output.size(), grad, weights, width);
  }
  if (kind_ == Kind::kMeanAbsoluteError || kind_ == Kind::kHuber) {
    return ElementwiseLoss(
        kind_ == Kind::kHuber ? ElementwiseKind::kHuber : ElementwiseKind::kMeanAbsoluteError,
        output.data(), target, n, width, grad, weights, delta_);
  }
  if (kind_ == Kind::kCategoricalCrossentropy) {
    return CategoricalCrossentropy(output.data(), target, n, width, from_logits_, label_smoothing_,
                                   grad, weights);
  }
  return BinaryCrossEntropy(output.data(), target, output.size(), from_logits_, grad, weights,
                            width);
}

// A user's loss function gives each example's loss and its gradient; weighted and
// averaged here as the built-ins are (SUM_OVER_BATCH_SIZE).
absl::StatusOr<float> Loss::ComputeCustom(const Tensor& output, const Batch& batch,
                                          Tensor* doutput) const {
  const int64_t n = output.dim(0);
  if (n == 0) return 0.f;
  // What the function leaves unwritten shows: a NaN loss, a zero gradient.
  std::vector<float> losses(static_cast<size_t>(n), std::nanf(""));
  if (doutput != nullptr) std::fill(doutput->data(), doutput->data() + doutput->size(), 0.f);
  absl::Status status = custom_->Compute(output, batch, losses.data(), doutput);
  if (!status.ok()) {
    return absl::Status(status.code(), absl::StrCat("loss ", name_, ": ", status.message()));
  }
  if (doutput != nullptr && doutput->shape() != output.shape()) {
    return absl::InternalError(absl::StrCat("loss ", name_, " resized its gradient to ",
                                            ShapeString(doutput->shape()), "; the output is ",
                                            ShapeString(output.shape())));
  }
  const int64_t width = output.size() / n;
  double total = 0;
  for (int64_t b = 0; b < n; ++b) {
    const float w = batch.weights.empty() ? 1.f : batch.weights[static_cast<size_t>(b)];
    total += static_cast<double>(w) * losses[static_cast<size_t>(b)];
    if (doutput == nullptr) continue;
    const float scale = w / static_cast<float>(n);
    float* g = doutput->data() + b * width;
    for (int64_t j = 0; j < width; ++j) g[j] *= scale;
  }
  return static_cast<float>(total / static_cast<double>(n));
}

}  // namespace ringwork
