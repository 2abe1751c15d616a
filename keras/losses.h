// The losses a model can be compiled with, by Keras name:
//   "sparse_categorical_crossentropy" (class ids; from_logits says whether the
//       model outputs logits or, through a softmax, probabilities),
//   "mse" / "mean_squared_error" (float targets of the output's shape, any shape;
//       or class ids as numbers for one output),
//   "binary_crossentropy" (float targets in [0, 1] of the output's shape:
//       multi-label; or ids 0 and 1 for one output),
//   "mae" / "mean_absolute_error", "huber" (float targets of the output's shape;
//       huber's delta is LossSpec::delta),
//   "categorical_crossentropy" (one-hot or soft float targets of the output's
//       shape, from_logits as above, LossSpec::label_smoothing).
// Any other name is looked up among the losses registered with RegisterLoss
// (keras/custom_objects.h): user-defined, weighted and averaged as the built-ins.
// keras/loss_functions.h has the formulas of the last three.
// Per-example weights (Keras' sample_weight) scale each example's loss; the mean
// stays over the examples (SUM_OVER_BATCH_SIZE).
#ifndef RINGWORK_KERAS_LOSSES_H_
#define RINGWORK_KERAS_LOSSES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/dataset.h"
#include "tensor/tensor.h"

namespace ringwork {

class LossFunction;  // keras/custom_objects.h

struct LossSpec {
  std::string name = "sparse_categorical_crossentropy";
  bool from_logits = false;
  float label_smoothing = 0;  // categorical_crossentropy
  float delta = 1;            // huber
};

class Loss {
 public:
  enum class Kind {
    kSparseCategoricalCrossentropy,
    kMeanSquaredError,
    kBinaryCrossentropy,
    kMeanAbsoluteError,
    kHuber,
    kCategoricalCrossentropy,
    kCustom  // Registered by the user.
  };

  static absl::StatusOr<Loss> Create(const LossSpec& spec);
  // Whether `name` is one of the built-in losses above.
  static bool IsBuiltIn(const std::string& name);
  Kind kind() const { return kind_; }
  const std::string& name() const { return name_; }
  bool from_logits() const { return from_logits_; }
  // The model's output is logits although the spec said probabilities: the last
  // softmax (or a sigmoid, for binary_crossentropy) was fused into this loss
  // (Model::Build), as Keras computes it from the logits.
  void set_fused_logits() { from_logits_ = true; }

  // Mean loss over the batch; writes d(loss)/d(output) when `doutput` is not null.
  // INVALID_ARGUMENT when the batch's targets do not fit the loss or the output.
  absl::StatusOr<float> Compute(const Tensor& output, const Batch& batch, Tensor* doutput) const;
  absl::StatusOr<float> Compute(const Tensor& output, const std::vector<int32_t>& labels,
                                Tensor* doutput) const;

 private:
  absl::StatusOr<float> ComputeCustom(const Tensor& output, const Batch& batch,
                                      Tensor* doutput) const;

  Kind kind_ = Kind::kSparseCategoricalCrossentropy;
  std::string name_;
  bool from_logits_ = false;
  float label_smoothing_ = 0, delta_ = 1;
  std::shared_ptr<const LossFunction> custom_;
};

}  // namespace ringwork

#endif  // RINGWORK_KERAS_LOSSES_H_
