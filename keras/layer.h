// A layer of a Model: builds its variables for an input shape, runs
// forward, and backward (gradients of its variables into their arena slots, and of
// its input). Shapes exclude the batch dimension.
//
//   class MyLayer : public Layer {
//     absl::StatusOr<Shape> Build(const Shape& input, const BuildContext& ctx) override;
//     absl::Status Forward(KernelContext& k, const Tensor& x, Tensor* y, bool training) override;
//     absl::Status Backward(KernelContext& k, const Tensor& x, const Tensor& y,
//                           const Tensor& dy, Tensor* dx) override;
//   };
//
// Backward receives the x and y of the last Forward (the model keeps them). The
// model runs Backward only down to its first layer with variables, and gives that
// layer a null dx (nothing below it needs an input gradient).
#ifndef RINGWORK_KERAS_LAYER_H_
#define RINGWORK_KERAS_LAYER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/kernel_context.h"
#include "strategy/variable.h"
#include "tensor/tensor.h"

namespace ringwork {

struct BuildContext {
  uint64_t seed = 0;  // Initialisation seed.
  // Adds `count` doubles over every replica, in place (a SUM all-reduce), for
  // layers whose math spans the replicas (SyncBatchNormalization). Every replica
  // calls it at the same points of a step.
  std::function<absl::Status(double* data, int64_t count)> sum_over_replicas;
};

class Layer {
 public:
  virtual ~Layer() = default;
  // The Keras class name: "Dense", "Conv2D", ...
  virtual std::string type() const = 0;
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  // Creates the variables; returns the output shape for `input` (no batch).
  virtual absl::StatusOr<Shape> Build(const Shape& input, const BuildContext& ctx) = 0;
  // Layers of several inputs (Add, Concatenate, Multiply: MergeLayer) say true and
  // are built and run with the *Merge calls below instead.
  virtual bool merges() const { return false; }
  virtual absl::Status Forward(KernelContext& k, const Tensor& x, Tensor* y, bool training) = 0;
  virtual absl::Status Backward(KernelContext& k, const Tensor& x, const Tensor& y,
                                const Tensor& dy, Tensor* dx) = 0;

  // Keras' layer.trainable: false freezes the layer (set it before Compile, as
  // Keras asks to compile again): its variables become non-trainable, neither
  // updated nor all-reduced, and a frozen BatchNormalization normalizes with its
  // moving statistics in training too and leaves them as they are.
  // A wrapper's (Bidirectional, TimeDistributed) goes to the layers inside it.
  void set_trainable(bool trainable) {
    trainable_ = trainable;
    for (Layer* sub : sublayers_) sub->set_trainable(trainable);
  }
  bool trainable() const { return trainable_; }
  // Trainable variables (gradients, the optimizer); none when frozen.
  std::vector<Variable*> variables() const;
  // Keras' non-trainable weights (BatchNormalization's moving statistics, and
  // every variable of a frozen layer): saved, broadcast from the chief and
  // compared across replicas as the trainable ones, never trained.
  std::vector<Variable*> non_trainable_variables() const;
  // The variables that trainable=false froze (their gradients go nowhere).
  std::vector<Variable*> frozen_variables() const;
  // Trainable, then non-trainable (Keras' layer.weights).
  std::vector<Variable*> weights() const;
  int64_t param_count() const;  // Of every weight, as Keras' summary counts them.
  int64_t trainable_param_count() const;
  const Shape& output_shape() const { return output_shape_; }
  // The activation applied last inside this layer ("softmax" matters to losses).
  virtual std::string activation_name() const { return ""; }
  // Settings every worker must share that its type and output shape do not show
  // ("momentum 0.99, epsilon 0.001"): part of the agreement check.
  virtual std::string config() const { return ""; }
  // Its arguments under Keras' names ({"filters": 16, "kernel_size": [3, 3],
  // "strides": [1, 1], "padding": "same", ...}): what exporters read.
  virtual nlohmann::json keras_config() const { return nlohmann::json::object(); }
  // Keras' masks over time steps (keras/sequence_masks.h). A mask is [batch, steps]
  // of 0 (padding) and 1, over the first axis after the batch. Layers that make one
  // (Embedding with mask_zero, Masking) say makes_mask and compute it from their
  // input after each Forward. A layer below a mask says what it does with it
  // (Keras' supports_masking): by default it refuses one (the model does not build).
  enum class MaskUse {
    kRefuses,  // Not a sequence layer: the model fails to build.
    kPasses,   // Per step (Dense, Dropout): its output carries the same mask.
    kReads,    // Uses it and ends it (GlobalAveragePooling1D, LSTM returning the last state).
    kReadsAndPasses,  // Uses it, and its output carries it (LSTM with return_sequences).
  };
  virtual MaskUse mask_use() const { return MaskUse::kRefuses; }
  virtual bool makes_mask() const { return false; }
  // `mask` gets [x.dim(0) * steps] values, 1 where the step holds data.
  virtual void MakeMask(const Tensor& x, std::vector<uint8_t>* mask) const {}
  // Layers that read masks: the mask of the input of the next Forward and the
  // Backward after it ([batch, steps], owned by the model), or null for none.
  virtual void set_input_mask(const uint8_t* mask) {}

  // Which replica runs this copy of the model (layers with randomness mix it in).
  virtual void set_replica(int64_t replica) {}
  // How many training steps this layer has run (layers with randomness draw from
  // it); restored with a checkpoint, so that a resumed run draws the same masks.
  virtual void set_training_step(int64_t step) {}

  // State learned from the training batches themselves (BatchNormalization's
  // moving mean and variance). After each training step the model adds up every
  // layer's BatchSums over all replicas (one all-reduce) and hands the totals to
  // UpdateFromBatchSums, so every replica updates its state alike.
  virtual int64_t batch_sums_size() const { return 0; }
  // Layers that call sum_over_replicas in Forward (training) and Backward. The
  // model then reduces gradients after the backward pass (no overlap thread on
  // the communicator meanwhile), and a replica without examples at a step calls
  // JoinWithoutBatch where Forward (forward = true) and Backward would have run.
  virtual bool sums_over_replicas() const { return false; }
  virtual absl::Status JoinWithoutBatch(bool forward) { return absl::OkStatus(); }
  // This replica's sums of its last training Forward (batch_sums_size values).
  virtual void BatchSums(double* out) const {}
  virtual void UpdateFromBatchSums(const double* totals) {}
  // After the optimizer applied a training step: state the step changes besides the
  // weights that a layer computed earlier in it (SyncBatchNormalization's moving
  // statistics, from its Forward). A step that fails before this changed nothing,
  // so running it again (elastic training) counts it once.
  virtual void CommitStep() {}

 protected:
  Variable* AddVariable(const std::string& suffix, Shape shape);
  Variable* AddNonTrainableVariable(const std::string& suffix, Shape shape);

  std::string name_;
  bool trainable_ = true;
  Shape output_shape_;
  std::vector<std::unique_ptr<Variable>> variables_;
  std::vector<std::unique_ptr<Variable>> non_trainable_;
  // Layers inside this one (Bidirectional's two), owned by it: their variables
  // count as its own, after its own, frozen or trained with it.
  std::vector<Layer*> sublayers_;

 private:
  void CollectTrainable(std::vector<Variable*>& out) const;
  void CollectStatistics(std::vector<Variable*>& out) const;
};

// A layer of several inputs of the functional API (keras/functional.h). Its
// single-input calls fail; the model calls the *Merge ones.
class MergeLayer : public Layer {
 public:
  bool merges() const override { return true; }
  // `inputs` has 2 or more shapes (no batch dimension).
  virtual absl::StatusOr<Shape> BuildMerge(const std::vector<Shape>& inputs) = 0;
  virtual absl::Status ForwardMerge(KernelContext& k, const std::vector<const Tensor*>& xs,
                                    Tensor* y) = 0;
  // dxs[i] may be null: no gradient wanted for input i.
  virtual absl::Status BackwardMerge(KernelContext& k, const std::vector<const Tensor*>& xs,
                                     const Tensor& dy, const std::vector<Tensor*>& dxs) = 0;

  absl::StatusOr<Shape> Build(const Shape&, const BuildContext&) override { return OneInput(); }
  absl::Status Forward(KernelContext&, const Tensor&, Tensor*, bool) override { return OneInput(); }
  absl::Status Backward(KernelContext&, const Tensor&, const Tensor&, const Tensor&,
                        Tensor*) override {
    return OneInput();
  }

 private:
  absl::Status OneInput() const;
};

// Output shape with the batch dimension in front.
inline Shape WithBatch(int64_t batch, const Shape& shape) {
  Shape s = shape;
  s.insert(s.begin(), batch);
  return s;
}

}  // namespace ringwork

#endif  // RINGWORK_KERAS_LAYER_H_
