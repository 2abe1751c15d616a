// Flatten, Dropout and Activation: layers without weights.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "keras/activation_function.h"
#include "base/fnv1a.h"
#include "keras/layers.h"
#include "kernels/dropout.h"

namespace ringwork {
namespace {

class FlattenLayer : public Layer {
 public:
  std::string type() const override { return "Flatten"; }
  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext&) override {
    output_shape_ = {NumElements(input)};
    return output_shape_;
  }
  absl::Status Forward(KernelContext&, const Tensor& x, Tensor* y, bool) override {
    *y = x;
    y->Reshape({x.dim(0), output_shape_[0]});
    return absl::OkStatus();
  }
  absl::Status Backward(KernelContext&, const Tensor& x, const Tensor&, const Tensor& dy,
                        Tensor* dx) override {
    if (dx == nullptr) return absl::OkStatus();
    *dx = dy;
    dx->Reshape(x.shape());
    return absl::OkStatus();
  }
};

class DropoutLayer : public Layer {
 public:
  DropoutLayer(float rate, uint64_t seed) : rate_(rate), seed_(seed) {}
  std::string type() const override { return "Dropout"; }
  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext& ctx) override {
    if (!(rate_ >= 0 && rate_ < 1)) {
      return absl::InvalidArgumentError(absl::StrCat(name_, ": rate must be in [0, 1), got ", rate_));
    }
    // A stream of its own per layer (as Keras gives each layer its own seed
    // generator): two Dropout layers never drop the same units in step.
    if (seed_ == 0) seed_ = ctx.seed ^ 0x5bd1e995 ^ Fnv1a64(name_);
    output_shape_ = input;
    return output_shape_;
  }
  // Each worker uses other masks (as each replica in TensorFlow does).
  void set_replica(int64_t replica) override { replica_ = replica; }
  void set_training_step(int64_t step) override { step_ = static_cast<uint64_t>(step); }
  absl::Status Forward(KernelContext&, const Tensor& x, Tensor* y, bool training) override {
    y->Resize(x.shape());
    if (!training || rate_ == 0) {
      std::memcpy(y->data(), x.data(), sizeof(float) * x.size());
      active_ = false;
      return absl::OkStatus();
    }
    mask_.Resize(x.shape());
    DropoutForward(x.data(), y->data(), mask_.data(), x.size(), rate_, seed_ + replica_ * 7919,
                   step_++);
    active_ = true;
    return absl::OkStatus();
  }
  absl::Status Backward(KernelContext&, const Tensor& x, const Tensor&, const Tensor& dy,
                        Tensor* dx) override {
    if (dx == nullptr) return absl::OkStatus();
    dx->Resize(x.shape());
    if (active_) {
      DropoutBackward(dy.data(), mask_.data(), dx->data(), dy.size());
    } else {
      std::memcpy(dx->data(), dy.data(), sizeof(float) * dy.size());
    }
    return absl::OkStatus();
  }

 private:
  const float rate_;
  uint64_t seed_;
  int64_t replica_ = 0;
  uint64_t step_ = 0;
  bool active_ = false;
  Tensor mask_;
};

class ActivationLayerImpl : public Layer, public SoftmaxOutput {
 public:
  explicit ActivationLayerImpl(std::string activation) : activation_name_(std::move(activation)) {}
  std::string type() const override { return "Activation"; }
  std::string activation_name() const override { return activation_.name(); }
  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext&) override {
    RW_ASSIGN_OR_RETURN(activation_, ActivationFunction::Parse(activation_name_));
    output_shape_ = input;
    return output_shape_;
  }
  bool OutputLogits(bool logits) override {
    if (!activation_.is_softmax()) return false;
    logits_ = logits;
    return true;
  }
  absl::Status Forward(KernelContext& k, const Tensor& x, Tensor* y, bool) override {
    if (logits_) {
      *y = x;
      return absl::OkStatus();
    }
    return activation_.Forward(k, x, y);
  }
  absl::Status Backward(KernelContext& k, const Tensor& x, const Tensor& y, const Tensor& dy,
                        Tensor* dx) override {
    if (dx == nullptr) return absl::OkStatus();
    if (logits_) {
      *dx = dy;
      return absl::OkStatus();
    }
    return activation_.Backward(k, x, y, dy, dx);
  }

 private:
  std::string activation_name_;
  ActivationFunction activation_;
  bool logits_ = false;
};

}  // namespace

std::unique_ptr<Layer> Flatten() { return std::make_unique<FlattenLayer>(); }
std::unique_ptr<Layer> Dropout(float rate, uint64_t seed) {
  return std::make_unique<DropoutLayer>(rate, seed);
}
std::unique_ptr<Layer> ActivationLayer(const std::string& activation) {
  return std::make_unique<ActivationLayerImpl>(activation);
}

}  // namespace ringwork
