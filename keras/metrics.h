// Metrics, by Keras name: "accuracy" (for a one-output model: prediction > 0.5 vs
// label; otherwise the same as "sparse_categorical_accuracy": argmax vs label;
// with number targets, Keras' binary_accuracy: each output > 0.5 vs its target),
// "mae" / "mean_absolute_error" and "mse" / "mean_squared_error" (numbers),
// "rmse" / "root_mean_squared_error" (the square root of the weighted mean of
// squared errors), "mean" (the mean of the loss), "auc" (Keras' AUC: the area
// under the ROC curve from 200 thresholds, for binary labels and one probability
// per example, or two classes), "precision" and "recall" (Keras' at threshold 0.5:
// every output is one yes-or-no decision, a probability above 0.5 against a
// target that is not 0; class ids stand for their one-hot rows, logits for their
// sigmoid or softmax; an example's weight counts for each of its decisions),
// "top_k_categorical_accuracy" / "sparse_top_k_categorical_accuracy" (the class is
// among the 5 highest outputs, ties at the boundary counted in, as
// tf.math.in_top_k; the class of a one-hot or soft target row is its argmax), and
// any metric registered with RegisterMetric (keras/custom_objects.h). A metric's state is a vector
// of sums (total and count; for AUC the histograms of positives' and negatives' predictions over
// the thresholds), so the strategy adds them over every worker and every worker reports the same
// number: for "auc", the AUC of the whole (global) evaluation set, not a mean of batches.
//
//   RW_ASSIGN_OR_RETURN(Metric auc, Metric::Create("auc"));
//   std::vector<double> state(auc.state_size(), 0.0);
//   auc.Accumulate(outputs, labels, loss, /*logits=*/false, state.data());
//   ... add other batches' (and workers') states ...
//   double value = auc.Result(state.data());
#ifndef RINGWORK_KERAS_METRICS_H_
#define RINGWORK_KERAS_METRICS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/dataset.h"
#include "tensor/tensor.h"

namespace ringwork {

class MetricFunction;  // keras/custom_objects.h

class Metric {
 public:
  enum class Kind {
    kAccuracy,
    kSparseCategoricalAccuracy,
    kMean,
    kAuc,
    kMeanAbsoluteError,
    kMeanSquaredError,
    kRootMeanSquaredError,
    kPrecision,
    kRecall,
    kTopKCategoricalAccuracy,
    kCustom,  // Registered by the user.
  };
  static constexpr int kAucThresholds = 200;  // Keras' num_thresholds.

  static absl::StatusOr<Metric> Create(const std::string& name);
  static bool IsBuiltIn(const std::string& name);
  static constexpr int kTopK = 5;  // Keras' default k.
  const std::string& name() const { return name_; }
  Kind kind() const { return kind_; }
  // Whether it can judge a model of `width` outputs per example (AUC: 1 or 2).
  absl::Status CheckOutputWidth(int64_t width) const;

  // INVALID_ARGUMENT when the metric reads the batch's float targets output by
  // output and they are not of the outputs' size.
  absl::Status CheckTargets(const Tensor& outputs, const Batch& batch) const;

  int64_t state_size() const;
  // Adds a batch to `state`: `outputs` [batch, width] against the batch's labels
  // or targets, each example counted with its weight (Keras' weighted metrics);
  // kMean adds `value` once per example. `logits`: outputs are logits (AUC turns
  // them into probabilities first).
  void Accumulate(const Tensor& outputs, const Batch& batch, double value, bool logits,
                  double* state) const;
  void Accumulate(const Tensor& outputs, const std::vector<int32_t>& labels, double value,
                  bool logits, double* state) const;
  double Result(const double* state) const;

 private:
  void AccumulateDecisions(const Tensor& outputs, const Batch& batch, bool logits,
                           double* state) const;

  Kind kind_ = Kind::kAccuracy;
  std::string name_;
  std::shared_ptr<const MetricFunction> custom_;
};

}  // namespace ringwork

#endif  // RINGWORK_KERAS_METRICS_H_
