// Conv2D, MaxPool2D and AveragePooling2D over NHWC inputs.
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "keras/activation_function.h"
#include "keras/initializers.h"
#include "keras/kernel_cache.h"
#include "keras/layers.h"
#include "kernels/conv2d.h"
#include "kernels/pooling.h"

namespace ringwork {
namespace {

absl::StatusOr<Padding> ParsePadding(const std::string& layer, const std::string& text) {
  if (text == "valid") return Padding::kValid;
  if (text == "same") return Padding::kSame;
  return absl::InvalidArgumentError(
      absl::StrCat(layer, ": padding \"", text, "\" must be \"valid\" or \"same\""));
}

absl::Status NeedImage(const std::string& layer, const Shape& input) {
  if (input.size() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat(layer, " needs [height, width, channels] inputs, got ", ShapeString(input)));
  }
  return absl::OkStatus();
}

class Conv2DLayer : public Layer {
 public:
  Conv2DLayer(int64_t filters, int64_t kernel_size, Conv2DOptions options)
      : filters_(filters), kernel_size_(kernel_size), options_(std::move(options)) {}
  std::string type() const override { return "Conv2D"; }
  std::string activation_name() const override {
    // Before Build, as given.
    if (!output_shape_.empty()) return activation_.name();
    return options_.activation.empty() ? "linear" : options_.activation;
  }
  nlohmann::json keras_config() const override {
    return {{"filters", filters_},
            {"kernel_size", {kernel_size_, kernel_size_}},
            {"strides", {options_.strides, options_.strides}},
            {"padding", options_.padding},
            {"activation", activation_.name()},
            {"use_bias", options_.use_bias}};
  }

  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext& ctx) override {
    RW_RETURN_IF_ERROR(NeedImage(name_, input));
    RW_ASSIGN_OR_RETURN(activation_, ActivationFunction::Parse(options_.activation));
    RW_ASSIGN_OR_RETURN(Padding padding, ParsePadding(name_, options_.padding));
    shape_ = Conv2DShape{1,
                         input[0],
                         input[1],
                         input[2],
                         filters_,
                         kernel_size_,
                         kernel_size_,
                         options_.strides,
                         options_.strides,
                         padding};
    if (filters_ <= 0 || kernel_size_ <= 0 || options_.strides <= 0 || shape_.rows().out <= 0 ||
        shape_.cols().out <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, ": ", filters_, " filters of ", kernel_size_, "x", kernel_size_,
                       " with stride ", options_.strides, " and ", options_.padding,
                       " padding do not fit a ", ShapeString(input), " input"));
    }
    Variable* kernel = AddVariable("kernel", {kernel_size_, kernel_size_, input[2], filters_});
    GlorotUniform(kernel->value, kernel_size_ * kernel_size_ * input[2],
                  kernel_size_ * kernel_size_ * filters_, ctx.seed, kernel->name);
    // use_bias=false: no variable, as in Keras; the kernel adds zeros.
    if (options_.use_bias) {
      bias_ = AddVariable("bias", {filters_});
    } else {
      zero_bias_ = Tensor({filters_});
      unused_bias_grad_.assign(static_cast<size_t>(filters_), 0.0f);
    }
    output_shape_ = {shape_.rows().out, shape_.cols().out, filters_};
    return output_shape_;
  }

  absl::Status Forward(KernelContext& k, const Tensor& x, Tensor* y, bool training) override {
    RW_ASSIGN_OR_RETURN(Conv2DKernel * kernel, KernelFor(k, x.dim(0)));
    if (!training && (activation_.is_linear() || activation_.name() == "relu")) {
      // Prediction: no z to keep for a backward pass, the ReLU fused in.
      y->Resize(WithBatch(x.dim(0), output_shape_));
      return kernel->ForwardInference(k, x.data(), variables_[0]->value.data(), bias(), y->data(),
                                      !activation_.is_linear());
    }
    Tensor* z = activation_.is_linear() ? y : &z_;
    z->Resize(WithBatch(x.dim(0), output_shape_));
    kernel->Forward(k, x.data(), variables_[0]->value.data(), bias(), z->data());
    if (!activation_.is_linear()) RW_RETURN_IF_ERROR(activation_.Forward(k, z_, y));
    return absl::OkStatus();
  }

  absl::Status Backward(KernelContext& k, const Tensor& x, const Tensor& y, const Tensor& dy,
                        Tensor* dx) override {
    RW_ASSIGN_OR_RETURN(Conv2DKernel * kernel, KernelFor(k, x.dim(0)));
    const Tensor* dz = &dy;
    if (!activation_.is_linear()) {
      RW_RETURN_IF_ERROR(activation_.Backward(k, z_, y, dy, &dz_));
      dz = &dz_;
    }
    kernel->BackwardWeights(k, x.data(), dz->data(), variables_[0]->grad,
                            bias_ != nullptr ? bias_->grad : unused_bias_grad_.data());
    if (dx != nullptr) {
      dx->Resize(x.shape());
      kernel->BackwardData(k, dz->data(), variables_[0]->value.data(), dx->data());
    }
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<Conv2DKernel*> KernelFor(KernelContext& k, int64_t batch) {
    return kernels_.Get(batch, [&](int64_t b) {
      Conv2DShape s = shape_;
      s.batch = b;
      return Conv2DKernel::Create(k, s);
    });
  }

  const float* bias() const { return bias_ != nullptr ? bias_->value.data() : zero_bias_.data(); }

  const int64_t filters_, kernel_size_;
  const Conv2DOptions options_;
  Conv2DShape shape_;
  Variable* bias_ = nullptr;             // None with use_bias=false.
  Tensor zero_bias_;                     // What the kernel adds then,
  std::vector<float> unused_bias_grad_;  // and where its bias gradient goes.
  ActivationFunction activation_;
  Tensor z_, dz_;
  PerBatch<Conv2DKernel> kernels_;
};

class PoolLayer : public Layer {
 public:
  PoolLayer(PoolKind kind, int64_t pool, PoolOptions options)
      : kind_(kind), pool_(pool), options_(std::move(options)) {}
  std::string type() const override {
    return kind_ == PoolKind::kMax ? "MaxPooling2D" : "AveragePooling2D";
  }
  nlohmann::json keras_config() const override {
    const int64_t stride = options_.strides > 0 ? options_.strides : pool_;
    return {{"pool_size", {pool_, pool_}},
            {"strides", {stride, stride}},
            {"padding", options_.padding}};
  }

  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext&) override {
    RW_RETURN_IF_ERROR(NeedImage(name_, input));
    RW_ASSIGN_OR_RETURN(Padding padding, ParsePadding(name_, options_.padding));
    const int64_t stride = options_.strides > 0 ? options_.strides : pool_;
    shape_ =
        Pool2DShape{kind_, 1, input[0], input[1], input[2], pool_, pool_, stride, stride, padding};
    if (pool_ <= 0 || shape_.rows().out <= 0 || shape_.cols().out <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(name_, ": a ", pool_, "x", pool_,
                                                     " window does not fit a ", ShapeString(input),
                                                     " input"));
    }
    output_shape_ = {shape_.rows().out, shape_.cols().out, input[2]};
    return output_shape_;
  }

  absl::Status Forward(KernelContext& k, const Tensor& x, Tensor* y, bool training) override {
    RW_ASSIGN_OR_RETURN(Pool2DKernel * kernel, KernelFor(k, x.dim(0)));
    y->Resize(WithBatch(x.dim(0), output_shape_));
    if (!training) {
      kernel->ForwardInference(k, x.data(), y->data());  // No workspace for a backward pass.
      return absl::OkStatus();
    }
    kernel->Forward(k, x.data(), y->data());
    return absl::OkStatus();
  }

  absl::Status Backward(KernelContext& k, const Tensor& x, const Tensor&, const Tensor& dy,
                        Tensor* dx) override {
    if (dx == nullptr) return absl::OkStatus();
    RW_ASSIGN_OR_RETURN(Pool2DKernel * kernel, KernelFor(k, x.dim(0)));
    dx->Resize(x.shape());
    kernel->Backward(k, dy.data(), dx->data());
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<Pool2DKernel*> KernelFor(KernelContext& k, int64_t batch) {
    return kernels_.Get(batch, [&](int64_t b) {
      Pool2DShape s = shape_;
      s.batch = b;
      return Pool2DKernel::Create(k, s);
    });
  }

  const PoolKind kind_;
  const int64_t pool_;
  const PoolOptions options_;
  Pool2DShape shape_;
  PerBatch<Pool2DKernel> kernels_;
};

}  // namespace

std::unique_ptr<Layer> Conv2D(int64_t filters, int64_t kernel_size, Conv2DOptions options) {
  return std::make_unique<Conv2DLayer>(filters, kernel_size, std::move(options));
}
std::unique_ptr<Layer> MaxPool2D(int64_t pool_size, PoolOptions options) {
  return std::make_unique<PoolLayer>(PoolKind::kMax, pool_size, std::move(options));
}
std::unique_ptr<Layer> AveragePooling2D(int64_t pool_size, PoolOptions options) {
  return std::make_unique<PoolLayer>(PoolKind::kAverage, pool_size, std::move(options));
}

}  // namespace ringwork
