// Flatten, Reshape, SliceLastAxis, Dropout and Activation: layers
// without weights.
#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/fnv1a.h"
#include "base/shortest_decimal.h"
#include "base/status_macros.h"
#include "keras/activation_function.h"
#include "keras/layers.h"
#include "kernels/dropout.h"

namespace ringwork {
namespace {

// The same values in another shape: Flatten and Reshape.
class ReshapingLayer : public Layer {
 public:
  absl::Status Forward(KernelContext&, const Tensor& x, Tensor* y, bool) override {
    *y = x;
    y->Reshape(WithBatch(x.dim(0), output_shape_));
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

class FlattenLayer : public ReshapingLayer {
 public:
  std::string type() const override { return "Flatten"; }
  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext&) override {
    output_shape_ = {NumElements(input)};
    return output_shape_;
  }
};

class ReshapeLayer : public ReshapingLayer {
 public:
  explicit ReshapeLayer(Shape target) : target_(std::move(target)) {}
  std::string type() const override { return "Reshape"; }
  nlohmann::json keras_config() const override { return {{"target_shape", target_}}; }
  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext&) override {
    const int64_t total = NumElements(input);
    int64_t known = 1, unknown = -1;
    for (size_t i = 0; i < target_.size(); ++i) {
      if (target_[i] == -1 && unknown < 0) {
        unknown = static_cast<int64_t>(i);
      } else if (target_[i] <= 0) {
        return Mismatch(input, "every dimension must be positive, or one of them -1");
      } else {
        known *= target_[i];
      }
    }
    output_shape_ = target_;
    if (unknown >= 0) {
      if (total % known != 0) return Mismatch(input, "the -1 dimension cannot be inferred");
      output_shape_[unknown] = total / known;
    } else if (known != total) {
      return Mismatch(input, absl::StrCat(total, " values cannot become ", known));
    }
    return output_shape_;
  }

 private:
  absl::Status Mismatch(const Shape& input, const std::string& why) const {
    return absl::InvalidArgumentError(absl::StrCat(name_, ": cannot reshape ", ShapeString(input),
                                                   " to ", ShapeString(target_), ": ", why));
  }

  const Shape target_;
};

// Columns [begin, end) of the last axis (what Keras models write as
// Lambda(lambda x: x[..., begin:end])): to route part of one input elsewhere.
class SliceLastAxisLayer : public Layer {
 public:
  SliceLastAxisLayer(int64_t begin, int64_t end) : begin_(begin), end_(end) {}
  std::string type() const override { return "SliceLastAxis"; }
  std::string config() const override { return absl::StrCat("columns ", begin_, " to ", end_); }
  nlohmann::json keras_config() const override { return {{"begin", begin_}, {"end", end_}}; }
  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext&) override {
    if (input.empty() || begin_ < 0 || end_ <= begin_ || end_ > input.back()) {
      return absl::InvalidArgumentError(absl::StrCat(name_, ": columns [", begin_, ", ", end_,
                                                     ") are not within the last axis of ",
                                                     ShapeString(input)));
    }
    width_ = input.back();
    output_shape_ = input;
    output_shape_.back() = end_ - begin_;
    return output_shape_;
  }
  absl::Status Forward(KernelContext&, const Tensor& x, Tensor* y, bool) override {
    y->Resize(WithBatch(x.dim(0), output_shape_));
    const int64_t rows = x.size() / width_, out = end_ - begin_;
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(y->data() + r * out, x.data() + r * width_ + begin_, sizeof(float) * out);
    }
    return absl::OkStatus();
  }
  absl::Status Backward(KernelContext&, const Tensor& x, const Tensor&, const Tensor& dy,
                        Tensor* dx) override {
    if (dx == nullptr) return absl::OkStatus();
    dx->Resize(x.shape());
    std::fill(dx->data(), dx->data() + dx->size(), 0.f);
    const int64_t rows = x.size() / width_, out = end_ - begin_;
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(dx->data() + r * width_ + begin_, dy.data() + r * out, sizeof(float) * out);
    }
    return absl::OkStatus();
  }

 private:
  const int64_t begin_, end_;
  int64_t width_ = 0;
};

// [n, h, w, c] -> [n, c]: the mean over the h x w positions of each channel.
class DropoutLayer : public Layer {
 public:
  DropoutLayer(float rate, uint64_t seed) : rate_(rate), seed_(seed) {}
  std::string type() const override { return "Dropout"; }
  MaskUse mask_use() const override { return MaskUse::kPasses; }
  std::string config() const override { return absl::StrCat("rate ", ShortestDecimal(rate_)); }
  nlohmann::json keras_config() const override { return {{"rate", rate_}}; }
  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext& ctx) override {
    if (!(rate_ >= 0 && rate_ < 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, ": rate must be in [0, 1), got ", rate_));
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

class MaskingLayer : public Layer {
 public:
  explicit MaskingLayer(float mask_value) : mask_value_(mask_value) {}
  std::string type() const override { return "Masking"; }
  std::string config() const override {
    return absl::StrCat("mask_value ", ShortestDecimal(mask_value_));
  }
  nlohmann::json keras_config() const override { return {{"mask_value", mask_value_}}; }
  bool makes_mask() const override { return true; }
  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext&) override {
    if (input.size() != 2 || input[0] <= 0 || input[1] <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          name_, " (Masking) needs [steps, features] inputs, got ", ShapeString(input)));
    }
    output_shape_ = input;
    return output_shape_;
  }
  void MakeMask(const Tensor& x, std::vector<uint8_t>* mask) const override {
    const int64_t features = output_shape_[1], steps = x.size() / features;
    mask->resize(static_cast<size_t>(steps));
    for (int64_t s = 0; s < steps; ++s) {
      const float* row = x.data() + s * features;
      (*mask)[s] = !std::all_of(row, row + features, [&](float v) { return v == mask_value_; });
    }
  }
  absl::Status Forward(KernelContext&, const Tensor& x, Tensor* y, bool) override {
    MakeMask(x, &keep_);
    y->Resize(x.shape());
    Apply(x.data(), y->data());
    return absl::OkStatus();
  }
  absl::Status Backward(KernelContext&, const Tensor& x, const Tensor&, const Tensor& dy,
                        Tensor* dx) override {
    if (dx == nullptr) return absl::OkStatus();
    dx->Resize(x.shape());
    Apply(dy.data(), dx->data());
    return absl::OkStatus();
  }

 private:
  // out = in on kept steps, 0 on masked ones.
  void Apply(const float* in, float* out) const {
    const int64_t features = output_shape_[1];
    for (size_t s = 0; s < keep_.size(); ++s) {
      for (int64_t f = 0; f < features; ++f) {
        out[s * features + f] = keep_[s] ? in[s * features + f] : 0.f;
      }
    }
  }
  const float mask_value_;
  std::vector<uint8_t> keep_;  // Of the last Forward.
};

class ActivationLayerImpl : public Layer, public LogitsOutput {
 public:
  explicit ActivationLayerImpl(std::string activation) : activation_name_(std::move(activation)) {}
  std::string type() const override { return "Activation"; }
  MaskUse mask_use() const override { return MaskUse::kPasses; }
  std::string activation_name() const override {
    // Before Build, as given.
    if (!output_shape_.empty()) return activation_.name();
    return activation_name_.empty() ? "linear" : activation_name_;
  }
  nlohmann::json keras_config() const override { return {{"activation", activation_.name()}}; }
  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext&) override {
    RW_ASSIGN_OR_RETURN(activation_, ActivationFunction::Parse(activation_name_));
    output_shape_ = input;
    return output_shape_;
  }
  std::string final_activation() const override {
    return activation_.is_softmax() || activation_.is_sigmoid() ? activation_.name() : "";
  }
  bool OutputLogits(bool logits) override {
    if (final_activation().empty()) return false;
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

std::unique_ptr<Layer> Reshape(Shape target_shape) {
  return std::make_unique<ReshapeLayer>(std::move(target_shape));
}
std::unique_ptr<Layer> SliceLastAxis(int64_t begin, int64_t end) {
  return std::make_unique<SliceLastAxisLayer>(begin, end);
}
std::unique_ptr<Layer> Flatten() { return std::make_unique<FlattenLayer>(); }
std::unique_ptr<Layer> Dropout(float rate, uint64_t seed) {
  return std::make_unique<DropoutLayer>(rate, seed);
}
std::unique_ptr<Layer> Masking(float mask_value) {
  return std::make_unique<MaskingLayer>(mask_value);
}
std::unique_ptr<Layer> ActivationLayer(const std::string& activation) {
  return std::make_unique<ActivationLayerImpl>(activation);
}

}  // namespace ringwork
