// Conv1D, Conv2D, MaxPooling1D/2D and AveragePooling1D/2D over channels-last
// inputs. A 1D layer runs the 2D kernels on an image of height 1: [steps,
// channels] is [1, steps, channels] in the same memory, and Keras' [k, in, out]
// kernel is its [1, k, in, out] one.
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

// `rank` 2: [height, width, channels]; 1: [steps, channels].
absl::Status NeedRank(const std::string& layer, int rank, const Shape& input) {
  if (static_cast<int>(input.size()) != rank + 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        layer, " needs ", rank == 2 ? "[height, width, channels]" : "[steps, channels]",
        " inputs, got ", ShapeString(input)));
  }
  return absl::OkStatus();
}

// `values` once per spatial axis: [k] or [k, k].
nlohmann::json PerAxis(int rank, int64_t value) {
  return rank == 2 ? nlohmann::json{value, value} : nlohmann::json{value};
}
nlohmann::json PerAxis(int rank, const HeightWidth& value) {
  return rank == 2 ? nlohmann::json{value.height, value.width} : nlohmann::json{value.width};
}

class ConvLayer : public Layer {
 public:
  // A Conv1D's sizes are its HeightWidths' widths (its height is 1).
  ConvLayer(int rank, int64_t filters, HeightWidth kernel_size, Conv2DOptions options)
      : rank_(rank), filters_(filters), kernel_(kernel_size), options_(std::move(options)) {}
  std::string type() const override { return rank_ == 2 ? "Conv2D" : "Conv1D"; }
  // What the shapes do not show, for the workers' agreement check.
  std::string config() const override {
    return absl::StrCat("strides ", options_.strides.height, "x", options_.strides.width,
                        ", dilation_rate ", options_.dilation_rate.height, "x",
                        options_.dilation_rate.width, ", padding ", options_.padding);
  }
  std::string activation_name() const override {
    // Before Build, as given.
    if (!output_shape_.empty()) return activation_.name();
    return options_.activation.empty() ? "linear" : options_.activation;
  }
  nlohmann::json keras_config() const override {
    nlohmann::json c = {{"filters", filters_},
                        {"kernel_size", PerAxis(rank_, kernel_)},
                        {"strides", PerAxis(rank_, options_.strides)},
                        {"dilation_rate", PerAxis(rank_, options_.dilation_rate)},
                        {"padding", options_.padding},
                        {"activation", activation_.name()},
                        {"use_bias", options_.use_bias}};
    AddWeightOptions(options_, &c);
    return c;
  }

  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext& ctx) override {
    RW_RETURN_IF_ERROR(NeedRank(name_, rank_, input));
    RW_ASSIGN_OR_RETURN(activation_, ActivationFunction::Parse(options_.activation));
    RW_ASSIGN_OR_RETURN(Padding padding, ParsePadding(name_, options_.padding));
    const HeightWidth &strides = options_.strides, &dilation = options_.dilation_rate;
    if (rank_ == 1 && !(strides.height == strides.width && dilation.height == dilation.width)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, ": a Conv1D's strides and dilation_rate are one number each"));
    }
    const bool both = strides.height > 1 || strides.width > 1;
    if (both && (dilation.height > 1 || dilation.width > 1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          name_, ": strides and dilation_rate above 1 together are refused, as Keras does"));
    }
    const int64_t channels = input.back();
    shape_ = Conv2DShape{.batch = 1,
                         .height = rank_ == 2 ? input[0] : 1,
                         .width = input[input.size() - 2],
                         .in_channels = channels,
                         .out_channels = filters_,
                         .kernel_h = rank_ == 2 ? kernel_.height : 1,
                         .kernel_w = kernel_.width,
                         .stride_h = rank_ == 2 ? strides.height : 1,
                         .stride_w = strides.width,
                         .padding = padding,
                         .dilation_h = rank_ == 2 ? dilation.height : 1,
                         .dilation_w = dilation.width};
    if (filters_ <= 0 || shape_.kernel_h <= 0 || shape_.kernel_w <= 0 || shape_.stride_h <= 0 ||
        shape_.stride_w <= 0 || shape_.dilation_h <= 0 || shape_.dilation_w <= 0 ||
        shape_.rows().out <= 0 || shape_.cols().out <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          name_, ": ", filters_, " filters of ", Size(shape_.kernel_h, shape_.kernel_w),
          " with stride ", Size(shape_.stride_h, shape_.stride_w), ", dilation ",
          Size(shape_.dilation_h, shape_.dilation_w), " and ", options_.padding,
          " padding do not fit a ", ShapeString(input), " input"));
    }
    Shape kernel_shape = {kernel_.width, channels, filters_};
    if (rank_ == 2) kernel_shape.insert(kernel_shape.begin(), kernel_.height);
    RW_RETURN_IF_ERROR(CheckWeightOptions(name_, options_));
    Variable* kernel = AddVariable("kernel", kernel_shape);
    const int64_t window = shape_.kernel_h * shape_.kernel_w;
    Initialize(options_.kernel_initializer, "glorot_uniform", kernel->value, window * channels,
               window * filters_, ctx.seed, kernel->name);
    Regularize(options_.kernel_regularizer, kernel);
    // use_bias=false: no variable, as in Keras; the kernel adds zeros.
    if (options_.use_bias) {
      bias_ = AddVariable("bias", {filters_});
      // Keras' fans of a bias: its own shape's.
      Initialize(options_.bias_initializer, "zeros", bias_->value, filters_, filters_, ctx.seed,
                 bias_->name);
      Regularize(options_.bias_regularizer, bias_);
    } else {
      zero_bias_ = Tensor({filters_});
      unused_bias_grad_.assign(static_cast<size_t>(filters_), 0.0f);
    }
    output_shape_ = {shape_.cols().out, filters_};
    if (rank_ == 2) output_shape_.insert(output_shape_.begin(), shape_.rows().out);
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
  // "3" (a Conv1D's), "3x3".
  std::string Size(int64_t height, int64_t width) const {
    return rank_ == 2 ? absl::StrCat(height, "x", width) : absl::StrCat(width);
  }

  const int rank_;
  const int64_t filters_;
  const HeightWidth kernel_;
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
  PoolLayer(int rank, PoolKind kind, int64_t pool, PoolOptions options)
      : rank_(rank), kind_(kind), pool_(pool), options_(std::move(options)) {}
  std::string type() const override {
    return absl::StrCat(kind_ == PoolKind::kMax ? "MaxPooling" : "AveragePooling", rank_, "D");
  }
  nlohmann::json keras_config() const override {
    const int64_t stride = options_.strides > 0 ? options_.strides : pool_;
    return {{"pool_size", PerAxis(rank_, pool_)},
            {"strides", PerAxis(rank_, stride)},
            {"padding", options_.padding}};
  }

  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext&) override {
    RW_RETURN_IF_ERROR(NeedRank(name_, rank_, input));
    RW_ASSIGN_OR_RETURN(Padding padding, ParsePadding(name_, options_.padding));
    const int64_t stride = options_.strides > 0 ? options_.strides : pool_;
    const int64_t height = rank_ == 2 ? input[0] : 1, pool_height = rank_ == 2 ? pool_ : 1,
                  stride_height = rank_ == 2 ? stride : 1;
    shape_ = Pool2DShape{kind_,        1,           height, input[input.size() - 2],
                         input.back(), pool_height, pool_,  stride_height,
                         stride,       padding};
    if (pool_ <= 0 || shape_.rows().out <= 0 || shape_.cols().out <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, ": a ", rank_ == 2 ? absl::StrCat(pool_, "x") : "", pool_,
                       " window does not fit a ", ShapeString(input), " input"));
    }
    output_shape_ = {shape_.cols().out, input.back()};
    if (rank_ == 2) output_shape_.insert(output_shape_.begin(), shape_.rows().out);
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

  const int rank_;
  const PoolKind kind_;
  const int64_t pool_;
  const PoolOptions options_;
  Pool2DShape shape_;
  PerBatch<Pool2DKernel> kernels_;
};

}  // namespace

std::unique_ptr<Layer> Conv2D(int64_t filters, HeightWidth kernel_size, Conv2DOptions options) {
  return std::make_unique<ConvLayer>(2, filters, kernel_size, std::move(options));
}
std::unique_ptr<Layer> Conv1D(int64_t filters, int64_t kernel_size, Conv2DOptions options) {
  return std::make_unique<ConvLayer>(1, filters, kernel_size, std::move(options));
}
std::unique_ptr<Layer> MaxPool2D(int64_t pool_size, PoolOptions options) {
  return std::make_unique<PoolLayer>(2, PoolKind::kMax, pool_size, std::move(options));
}
std::unique_ptr<Layer> AveragePooling2D(int64_t pool_size, PoolOptions options) {
  return std::make_unique<PoolLayer>(2, PoolKind::kAverage, pool_size, std::move(options));
}
std::unique_ptr<Layer> MaxPooling1D(int64_t pool_size, PoolOptions options) {
  return std::make_unique<PoolLayer>(1, PoolKind::kMax, pool_size, std::move(options));
}
std::unique_ptr<Layer> AveragePooling1D(int64_t pool_size, PoolOptions options) {
  return std::make_unique<PoolLayer>(1, PoolKind::kAverage, pool_size, std::move(options));
}

}  // namespace ringwork
