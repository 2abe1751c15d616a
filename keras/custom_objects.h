// User-defined losses, metrics and layers, registered by name (Keras'
// register_keras_serializable): CompileOptions, a saved model's compile_config
// and a Keras or TF.js config that name them find them here.
//
//   class LogCosh : public LossFunction {
//    public:
//     absl::Status Compute(const Tensor& output, const Batch& batch, float* losses,
//                          Tensor* doutput) const override {
//       for (int64_t b = 0; b < output.dim(0); ++b) {
//         const float e = output.data()[b] - batch.targets.data()[b];
//         losses[b] = std::log(std::cosh(e));
//         if (doutput != nullptr) doutput->data()[b] = std::tanh(e);
//       }
//       return absl::OkStatus();
//     }
//   };
//   RW_RETURN_IF_ERROR(RegisterLoss("log_cosh", [] { return std::make_shared<LogCosh>(); }));
//   CompileOptions compile;
//   compile.loss = {.name = "log_cosh"};
//   compile.metrics = {"accuracy"};  // and any name registered with RegisterMetric
//
// Register before Compile or LoadModel, on every worker alike (each worker's
// model is checked against the chief's, names included). A name cannot be
// registered twice nor shadow a built-in one.
#ifndef RINGWORK_KERAS_CUSTOM_OBJECTS_H_
#define RINGWORK_KERAS_CUSTOM_OBJECTS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "data/dataset.h"
#include "keras/layer.h"
#include "tensor/tensor.h"

namespace ringwork {

// A loss as Keras calls a loss function: each example's loss, which the model
// then weights (sample_weight, class_weight) and averages over the batch
// (SUM_OVER_BATCH_SIZE), so that N workers train as one.
class LossFunction {
 public:
  virtual ~LossFunction() = default;
  // `output`: the model's output for the batch, [n, ...]; the batch's class ids
  // (batch.labels) or float targets of the output's shape (batch.targets).
  // Writes each example's loss into `losses` (n values) and, when `doutput` is
  // not null (already of the output's shape), d(example b's loss)/d(output[b]).
  // An error (targets that do not fit) stops training with its message.
  virtual absl::Status Compute(const Tensor& output, const Batch& batch, float* losses,
                               Tensor* doutput) const = 0;
};

// A metric as Keras' stateful metrics are (update_state, result, reset_state),
// with a state of sums: it starts at zeros (the reset), each batch's Update adds
// to it, and before Result the strategy adds every replica's state element by
// element, so every worker reports the metric of the whole (global) data.
class MetricFunction {
 public:
  virtual ~MetricFunction() = default;
  virtual int64_t state_size() const = 0;
  // `outputs`: what the model outputs for the batch (probabilities where its last
  // softmax or sigmoid was fused into the loss); `loss`: the batch's mean loss;
  // batch.weights (when not empty) holds each example's weight.
  virtual void Update(const Tensor& outputs, const Batch& batch, double loss,
                      double* state) const = 0;
  virtual double Result(const double* state) const = 0;
};

using LossFactory = std::function<std::shared_ptr<const LossFunction>()>;
using MetricFactory = std::function<std::shared_ptr<const MetricFunction>()>;
// Makes the layer from its Keras config (what its keras_config() wrote, with
// "name" and "trainable", which the caller applies); its type() must be the
// registered class name, so that a saved model names it.
using LayerFactory =
    std::function<absl::StatusOr<std::unique_ptr<Layer>>(const nlohmann::json& config)>;

absl::Status RegisterLoss(const std::string& name, LossFactory factory);
absl::Status RegisterMetric(const std::string& name, MetricFactory factory);
absl::Status RegisterLayer(const std::string& class_name, LayerFactory factory);

// Null when nothing is registered under the name.
std::shared_ptr<const LossFunction> FindLoss(const std::string& name);
std::shared_ptr<const MetricFunction> FindMetric(const std::string& name);
const LayerFactory* FindLayer(const std::string& class_name);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_CUSTOM_OBJECTS_H_
