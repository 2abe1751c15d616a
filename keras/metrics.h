// Metrics, by Keras name: "accuracy" (for a one-output model: prediction > 0.5 vs
// label; otherwise the same as "sparse_categorical_accuracy": argmax vs label) and
// "mean" (the mean of the loss). A metric is a running (total, count) pair, so the
// strategy can sum it over all workers and every worker reports the same number.
#ifndef RINGWORK_KERAS_METRICS_H_
#define RINGWORK_KERAS_METRICS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/tensor.h"

namespace ringwork {

class Metric {
 public:
  enum class Kind { kAccuracy, kSparseCategoricalAccuracy, kMean };

  static absl::StatusOr<Metric> Create(const std::string& name);
  const std::string& name() const { return name_; }
  Kind kind() const { return kind_; }

  // Adds a batch: `outputs` [batch, width], `labels` [batch]; kMean adds `value`
  // once per example.
  void Update(const Tensor& outputs, const std::vector<int32_t>& labels, double value);
  double result() const { return count_ > 0 ? total_ / count_ : 0; }
  void Reset() { total_ = count_ = 0; }
  // For aggregation across workers.
  double total() const { return total_; }
  double count() const { return count_; }
  void Set(double total, double count) {
    total_ = total;
    count_ = count;
  }

 private:
  Kind kind_ = Kind::kAccuracy;
  std::string name_;
  double total_ = 0, count_ = 0;
};

}  // namespace ringwork

#endif  // RINGWORK_KERAS_METRICS_H_
