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
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown metric \"", name,
                     "\"; expected accuracy, sparse_categorical_accuracy, mean or auc"));
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
  const int64_t batch = static_cast<int64_t>(labels.size());
  if (kind_ == Kind::kMean) {
    state[0] += value * batch;
    state[1] += batch;
    return;
  }
  const int64_t width = outputs.size() / std::max<int64_t>(batch, 1);
  if (kind_ == Kind::kAuc) {
    // state[k]: positives, state[n + 1 + k]: negatives, whose prediction is above
    // exactly k thresholds.
    const auto& thresholds = AucThresholds();
    for (int64_t b = 0; b < batch; ++b) {
      const float* row = outputs.data() + b * width;
      double p = width == 1 ? row[0] : (logits ? row[1] - row[0] : row[1]);
      if (logits) p = Sigmoid(p);  // Two classes: softmax(z)[1] = sigmoid(z1 - z0).
      const int64_t above =
          std::lower_bound(thresholds.begin(), thresholds.end(), p) - thresholds.begin();
      state[(labels[b] != 0 ? 0 : kAucThresholds + 1) + above] += 1;
    }
    return;
  }
  for (int64_t b = 0; b < batch; ++b) {
    const float* row = outputs.data() + b * width;
    int64_t predicted;
    if (width == 1 && kind_ == Kind::kAccuracy) {
      predicted = row[0] > 0.5f ? 1 : 0;
    } else {
      predicted = std::max_element(row, row + width) - row;
    }
    state[0] += predicted == labels[b] ? 1 : 0;
  }
  state[1] += batch;
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
