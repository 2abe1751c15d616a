#include "keras/metrics.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace ringwork {
namespace {

// Keras' AUC thresholds: just below 0, (i + 1) / (n - 1) for i < n - 2, just above 1.
const std::array<double, Metric::kAucThresholds>& AucThresholds() {
  static const std::array<double, Metric::kAucThresholds> thresholds = [] {
    std::array<double, Metric::kAucThresholds> t{};
    constexpr double kEpsilon = 1e-7;
    t[0] = -kEpsilon;
    for (int i = 0; i < Metric::kAucThresholds - 2; ++i) {
      t[i + 1] = static_cast<double>(i + 1) / (Metric::kAucThresholds - 1);
    }
    t[Metric::kAucThresholds - 1] = 1 + kEpsilon;
    return t;
  }();
  return thresholds;
}

double Sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

}  // namespace

absl::StatusOr<Metric> Metric::Create(const std::string& name) {
  Metric m;
  m.name_ = name;
  if (name == "accuracy" || name == "acc") {
    m.kind_ = Kind::kAccuracy;
    m.name_ = "accuracy";
  } else if (name == "sparse_categorical_accuracy") {
    m.kind_ = Kind::kSparseCategoricalAccuracy;
  } else if (name == "mean") {
    m.kind_ = Kind::kMean;
  } else if (name == "auc" || name == "AUC") {
    m.kind_ = Kind::kAuc;
    m.name_ = "auc";
  } else if (name == "mae" || name == "mean_absolute_error") {
    m.kind_ = Kind::kMeanAbsoluteError;
    m.name_ = "mae";
  } else if (name == "mse" || name == "mean_squared_error") {
    m.kind_ = Kind::kMeanSquaredError;
    m.name_ = "mse";
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown metric \"", name,
                     "\"; expected accuracy, sparse_categorical_accuracy, mean, auc, mae or mse"));
  }
  return m;
}

absl::Status Metric::CheckOutputWidth(int64_t width) const {
  if (kind_ != Kind::kAuc || width == 1 || width == 2) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "the auc metric needs binary labels and one output per example (a probability or a logit) "
      "or two classes; this model has ",
      width, " outputs"));
}

int64_t Metric::state_size() const { return kind_ == Kind::kAuc ? 2 * (kAucThresholds + 1) : 2; }

void Metric::Accumulate(const Tensor& outputs, const std::vector<int32_t>& labels, double value,
                        bool logits, double* state) const {
  Batch batch;
  batch.labels = labels;
  Accumulate(outputs, batch, value, logits, state);
}

void Metric::Accumulate(const Tensor& outputs, const Batch& batch, double value, bool logits,
                        double* state) const {
  const int64_t n = outputs.rank() > 0 ? outputs.dim(0) : 0;
  const std::vector<int32_t>& labels = batch.labels;
  const bool numbers = batch.targets.rank() > 0;
  auto weight = [&](int64_t b) -> double {
    return batch.weights.empty() ? 1.0 : batch.weights[static_cast<size_t>(b)];
  };
  if (kind_ == Kind::kMean) {
    // The batch's (weighted) mean loss, once per example: the sum over examples.
    state[0] += value * n;
    state[1] += n;
    return;
  }
  const int64_t width = outputs.size() / std::max<int64_t>(n, 1);
  // Example b's target j as a number (a class id as its value).
  auto target = [&](int64_t b, int64_t j) -> double {
    return numbers ? batch.targets.data()[b * width + j] : labels[static_cast<size_t>(b)];
  };
  if (kind_ == Kind::kMeanAbsoluteError || kind_ == Kind::kMeanSquaredError) {
    for (int64_t b = 0; b < n; ++b) {
      double sum = 0;
      for (int64_t j = 0; j < width; ++j) {
        const double d = outputs.data()[b * width + j] - target(b, numbers ? j : 0);
        sum += kind_ == Kind::kMeanAbsoluteError ? std::fabs(d) : d * d;
      }
      state[0] += weight(b) * sum / static_cast<double>(width);
      state[1] += weight(b);
    }
    return;
  }
  if (kind_ == Kind::kAuc) {
    // state[k]: positives, state[n + 1 + k]: negatives, whose prediction is above
    // exactly k thresholds.
    const auto& thresholds = AucThresholds();
    for (int64_t b = 0; b < n; ++b) {
      const float* row = outputs.data() + b * width;
      double p = width == 1 ? row[0] : (logits ? row[1] - row[0] : row[1]);
      if (logits) p = Sigmoid(p);  // Two classes: softmax(z)[1] = sigmoid(z1 - z0).
      const int64_t above =
          std::lower_bound(thresholds.begin(), thresholds.end(), p) - thresholds.begin();
      state[(target(b, 0) != 0 ? 0 : kAucThresholds + 1) + above] += weight(b);
    }
    return;
  }
  if (numbers) {
    // Keras' binary_accuracy: each output against its target, at 0.5.
    for (int64_t b = 0; b < n; ++b) {
      int64_t right = 0;
      for (int64_t j = 0; j < width; ++j) {
        right += (outputs.data()[b * width + j] > 0.5f) == (target(b, j) > 0.5) ? 1 : 0;
      }
      state[0] += weight(b) * static_cast<double>(right) / static_cast<double>(width);
      state[1] += weight(b);
    }
    return;
  }
  for (int64_t b = 0; b < n; ++b) {
    const float* row = outputs.data() + b * width;
    int64_t predicted;
    if (width == 1 && kind_ == Kind::kAccuracy) {
      predicted = row[0] > 0.5f ? 1 : 0;
    } else {
      predicted = std::max_element(row, row + width) - row;
    }
    state[0] += predicted == labels[static_cast<size_t>(b)] ? weight(b) : 0;
  }
  if (batch.weights.empty()) {
    state[1] += n;
  } else {
    for (int64_t b = 0; b < n; ++b) state[1] += weight(b);
  }
}

double Metric::Result(const double* state) const {
  if (kind_ != Kind::kAuc) return state[1] > 0 ? state[0] / state[1] : 0;
  // True and false positives at threshold j: predictions above more than j thresholds.
  const double* pos = state;
  const double* neg = state + kAucThresholds + 1;
  double positives = 0, negatives = 0;
  for (int k = 0; k <= kAucThresholds; ++k) {
    positives += pos[k];
    negatives += neg[k];
  }
  if (positives == 0 || negatives == 0) return 0;  // Keras: divide_no_nan.
  std::array<double, kAucThresholds> tpr{}, fpr{};
  double tp = positives, fp = negatives;  // Above threshold 0: all but those above none.
  for (int j = 0; j < kAucThresholds; ++j) {
    tp -= pos[j];
    fp -= neg[j];
    tpr[j] = tp / positives;
    fpr[j] = fp / negatives;
  }
  // Keras' ROC "interpolation": trapezoids between consecutive thresholds.
  double area = 0;
  for (int j = 0; j + 1 < kAucThresholds; ++j)
    area += (fpr[j] - fpr[j + 1]) * (tpr[j] + tpr[j + 1]) / 2;
  return area;
}

}  // namespace ringwork
