#include "keras/metrics.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace ringwork {

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
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown metric \"", name, "\"; expected accuracy, sparse_categorical_accuracy or mean"));
  }
  return m;
}

void Metric::Update(const Tensor& outputs, const std::vector<int32_t>& labels, double value) {
  const int64_t batch = static_cast<int64_t>(labels.size());
  if (kind_ == Kind::kMean) {
    total_ += value * batch;
    count_ += batch;
    return;
  }
  const int64_t width = outputs.size() / std::max<int64_t>(batch, 1);
  for (int64_t b = 0; b < batch; ++b) {
    const float* row = outputs.data() + b * width;
    int64_t predicted;
    if (width == 1 && kind_ == Kind::kAccuracy) {
      predicted = row[0] > 0.5f ? 1 : 0;
    } else {
      predicted = std::max_element(row, row + width) - row;
    }
    total_ += predicted == labels[b] ? 1 : 0;
  }
  count_ += batch;
}

}  // namespace ringwork
