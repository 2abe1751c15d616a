// TimeDistributed: a layer applied to every step of [steps, ...] examples alike,
// as Keras': the steps become examples of one batch ([batch x steps, ...]) for
// the wrapped layer, and its outputs are put back per example.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "keras/layers.h"

namespace ringwork {
namespace {

// `from` with its first two axes as one, or `shape` in front of the rest.
void CopyAs(const Tensor& from, const Shape& shape, Tensor* to) {
  to->Resize(shape);
  std::memcpy(to->data(), from.data(), sizeof(float) * static_cast<size_t>(from.size()));
}

Shape Merged(int64_t batch, const Shape& example) {
  Shape s(example.begin() + 1, example.end());
  s.insert(s.begin(), batch * example[0]);
  return s;
}

class TimeDistributedLayer : public Layer {
 public:
  explicit TimeDistributedLayer(std::unique_ptr<Layer> layer) : inner_(std::move(layer)) {
    sublayers_ = {inner_.get()};
    set_trainable(inner_->trainable());
  }
  std::string type() const override { return "TimeDistributed"; }
  nlohmann::json keras_config() const override {
    nlohmann::json inner = inner_->keras_config();
    inner["name"] = inner_name_.empty() ? name_ : inner_name_;
    inner["trainable"] = trainable_;
    inner["dtype"] = "float32";
    return {{"layer",
             {{"module", "keras.layers"},
              {"class_name", inner_->type()},
              {"config", inner},
              {"registered_name", nullptr}}}};
  }
  std::string config() const override {
    return absl::StrCat(inner_->type(), " ", inner_->config());
  }
  std::string activation_name() const override { return inner_->activation_name(); }
  MaskUse mask_use() const override { return MaskUse::kPasses; }
  void set_replica(int64_t replica) override { inner_->set_replica(replica); }
  void set_training_step(int64_t step) override { inner_->set_training_step(step); }
  int64_t batch_sums_size() const override { return inner_->batch_sums_size(); }
  void BatchSums(double* out) const override { inner_->BatchSums(out); }
  void UpdateFromBatchSums(const double* totals) override { inner_->UpdateFromBatchSums(totals); }
  void CommitStep() override { inner_->CommitStep(); }

  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext& ctx) override {
    const std::string type = inner_->type();
    if (inner_->merges() || inner_->sums_over_replicas() || inner_->makes_mask() ||
        type == "Bidirectional" || type == "TimeDistributed") {
      return absl::InvalidArgumentError(absl::StrCat(
          name_, ": TimeDistributed cannot wrap a ", type,
          " (a merge, a layer that sums over replicas, one that makes a mask, or a wrapper)"));
    }
    if (input.size() < 2 || input[0] <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          name_, " (TimeDistributed) needs [steps, ...] inputs, got ", ShapeString(input)));
    }
    // The wrapped layer's variables are the wrapper's, as Keras and TF.js name them.
    if (inner_name_.empty()) inner_name_ = inner_->name();
    inner_->set_name(name_);
    RW_ASSIGN_OR_RETURN(const Shape out, inner_->Build(Shape(input.begin() + 1, input.end()), ctx));
    steps_ = input[0];
    output_shape_ = out;
    output_shape_.insert(output_shape_.begin(), steps_);
    return output_shape_;
  }

  absl::Status Forward(KernelContext& k, const Tensor& x, Tensor* y, bool training) override {
    const int64_t batch = x.dim(0);
    CopyAs(x, Merged(batch, Shape(x.shape().begin() + 1, x.shape().end())), &x_steps_);
    RW_RETURN_IF_ERROR(inner_->Forward(k, x_steps_, &y_steps_, training));
    CopyAs(y_steps_, WithBatch(batch, output_shape_), y);
    return absl::OkStatus();
  }

  absl::Status Backward(KernelContext& k, const Tensor& x, const Tensor&, const Tensor& dy,
                        Tensor* dx) override {
    CopyAs(dy, y_steps_.shape(), &dy_steps_);
    RW_RETURN_IF_ERROR(
        inner_->Backward(k, x_steps_, y_steps_, dy_steps_, dx == nullptr ? nullptr : &dx_steps_));
    if (dx != nullptr) CopyAs(dx_steps_, x.shape(), dx);
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<Layer> inner_;
  std::string inner_name_;  // As given (the config's "name" of the wrapped layer).
  int64_t steps_ = 0;
  Tensor x_steps_, y_steps_, dy_steps_, dx_steps_;  // [batch x steps, ...]
};

}  // namespace

std::unique_ptr<Layer> TimeDistributed(std::unique_ptr<Layer> layer) {
  return std::make_unique<TimeDistributedLayer>(std::move(layer));
}

}  // namespace ringwork
