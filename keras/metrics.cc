#include "keras/metrics.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "keras/custom_objects.h"

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

namespace {

struct BuiltInMetric {
  Metric::Kind kind;
  const char* reported;  // The name results carry; null: the name asked for.
};

const std::map<std::string, BuiltInMetric>& BuiltInMetrics() {
  using K = Metric::Kind;
  static const auto* metrics = new std::map<std::string, BuiltInMetric>{
      {"accuracy", {K::kAccuracy, "accuracy"}},
      {"acc", {K::kAccuracy, "accuracy"}},
      {"sparse_categorical_accuracy", {K::kSparseCategoricalAccuracy, nullptr}},
      {"mean", {K::kMean, nullptr}},
      {"auc", {K::kAuc, "auc"}},
      {"AUC", {K::kAuc, "auc"}},
      {"mae", {K::kMeanAbsoluteError, "mae"}},
      {"mean_absolute_error", {K::kMeanAbsoluteError, "mae"}},
      {"mse", {K::kMeanSquaredError, "mse"}},
      {"mean_squared_error", {K::kMeanSquaredError, "mse"}},
      {"rmse", {K::kRootMeanSquaredError, nullptr}},
      {"root_mean_squared_error", {K::kRootMeanSquaredError, nullptr}},
      {"precision", {K::kPrecision, nullptr}},
      {"recall", {K::kRecall, nullptr}},
      {"top_k_categorical_accuracy", {K::kTopKCategoricalAccuracy, nullptr}},
      {"sparse_top_k_categorical_accuracy", {K::kTopKCategoricalAccuracy, nullptr}},
  };
  return *metrics;
}

}  // namespace

bool Metric::IsBuiltIn(const std::string& name) { return BuiltInMetrics().count(name) > 0; }

absl::StatusOr<Metric> Metric::Create(const std::string& name) {
  Metric m;
  m.name_ = name;
  const auto built_in = BuiltInMetrics().find(name);
  if (built_in != BuiltInMetrics().end()) {
    m.kind_ = built_in->second.kind;
    if (built_in->second.reported != nullptr) m.name_ = built_in->second.reported;
  } else if ((m.custom_ = FindMetric(name)) != nullptr) {
    m.kind_ = Kind::kCustom;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown metric \"", name,
        "\"; expected accuracy, sparse_categorical_accuracy, mean, auc, mae, mse, rmse, "
        "precision, recall, top_k_categorical_accuracy or a metric registered with "
        "RegisterMetric"));
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

absl::Status Metric::CheckTargets(const Tensor& outputs, const Batch& batch) const {
  if (kind_ == Kind::kMean || kind_ == Kind::kCustom || batch.targets.rank() == 0 ||
      batch.targets.size() == outputs.size()) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "metric ", name_, " compares each output with its target, but the targets have shape ",
      ShapeString(batch.targets.shape()), " and the outputs ", ShapeString(outputs.shape())));
}

int64_t Metric::state_size() const {
  if (kind_ == Kind::kCustom) return custom_->state_size();
  if (kind_ == Kind::kAuc) return 2 * (kAucThresholds + 1);
  return kind_ == Kind::kPrecision || kind_ == Kind::kRecall ? 3 : 2;
}

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
  if (kind_ == Kind::kCustom) {
    custom_->Update(outputs, batch, value, state);
    return;
  }
  if (kind_ == Kind::kPrecision || kind_ == Kind::kRecall) {
    AccumulateDecisions(outputs, batch, logits, state);
    return;
  }
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
  if (kind_ == Kind::kMeanAbsoluteError || kind_ == Kind::kMeanSquaredError ||
      kind_ == Kind::kRootMeanSquaredError) {
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
  if (kind_ == Kind::kTopKCategoricalAccuracy) {
    // In the top k unless k or more classes score strictly higher (tf.math.in_top_k).
    for (int64_t b = 0; b < n; ++b) {
      const float* row = outputs.data() + b * width;
      int64_t c = labels.empty() ? 0 : labels[static_cast<size_t>(b)];
      if (numbers) {
        const float* t = batch.targets.data() + b * width;
        c = std::max_element(t, t + width) - t;
      }
      int64_t higher = 0;
      bool finite = true;
      if (c >= 0 && c < width) {
        for (int64_t j = 0; j < width; ++j) {
          higher += row[j] > row[c] ? 1 : 0;
          finite = finite && std::isfinite(row[j]);
        }
      }
      // tf.math.in_top_k: false for a row with a non-finite score.
      const bool in = c >= 0 && c < width && finite && higher < kTopK;
      state[0] += in ? weight(b) : 0;
      state[1] += weight(b);
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

// Every output one decision at 0.5: state [true positives, false positives, false
// negatives], each example's weight counted once per decision.
void Metric::AccumulateDecisions(const Tensor& outputs, const Batch& batch, bool logits,
                                 double* state) const {
  const int64_t n = outputs.rank() > 0 ? outputs.dim(0) : 0;
  const int64_t width = outputs.size() / std::max<int64_t>(n, 1);
  const bool numbers = batch.targets.rank() > 0;
  std::vector<double> p(static_cast<size_t>(width));
  for (int64_t b = 0; b < n; ++b) {
    const float* row = outputs.data() + b * width;
    double top = row[0];
    for (int64_t j = 1; j < width; ++j) top = std::max<double>(top, row[j]);
    double sum = 0;
    for (int64_t j = 0; j < width; ++j) {
      p[j] = row[j];
      if (logits && width == 1) p[j] = Sigmoid(row[j]);
      if (logits && width > 1) sum += p[j] = std::exp(row[j] - top);
    }
    const double w = batch.weights.empty() ? 1.0 : batch.weights[static_cast<size_t>(b)];
    for (int64_t j = 0; j < width; ++j) {
      const double q = logits && width > 1 ? p[j] / sum : p[j];
      const bool actual = numbers ? batch.targets.data()[b * width + j] != 0
                                  : (width == 1 ? batch.labels[b] != 0 : batch.labels[b] == j);
      const bool predicted = q > 0.5;
      if (predicted && actual) state[0] += w;
      if (predicted && !actual) state[1] += w;
      if (!predicted && actual) state[2] += w;
    }
  }
}

double Metric::Result(const double* state) const {
  if (kind_ == Kind::kCustom) return custom_->Result(state);
  if (kind_ == Kind::kPrecision || kind_ == Kind::kRecall) {  // Keras: divide_no_nan.
    const double d = state[0] + state[kind_ == Kind::kPrecision ? 1 : 2];
    return d > 0 ? state[0] / d : 0;
  }
  if (kind_ == Kind::kRootMeanSquaredError)
    return state[1] > 0 ? std::sqrt(state[0] / state[1]) : 0;
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
