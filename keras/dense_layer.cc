// Dense: y = activation(x . kernel + bias) on the last axis of each example, as
// Keras' Dense ([..., n] -> [..., units]); with flatten_input, on the example read
// flat ([units]).
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "keras/activation_function.h"
#include "keras/initializers.h"
#include "keras/kernel_cache.h"
#include "keras/layers.h"
#include "kernels/dense.h"

namespace ringwork {
namespace {

class DenseLayer : public Layer, public LogitsOutput {
 public:
  DenseLayer(int64_t units, DenseOptions options) : units_(units), options_(options) {}
  std::string type() const override { return "Dense"; }
  MaskUse mask_use() const override {
    return options_.flatten_input ? MaskUse::kRefuses : MaskUse::kPasses;
  }
  // What keras_config leaves out (Keras' Dense acts on the last axis).
  std::string config() const override { return options_.flatten_input ? "flatten_input" : ""; }
  std::string activation_name() const override {
    // Before Build, as given.
    if (!output_shape_.empty()) return activation_.name();
    return options_.activation.empty() ? "linear" : options_.activation;
  }
  nlohmann::json keras_config() const override {
    nlohmann::json c = {
        {"units", units_}, {"activation", activation_.name()}, {"use_bias", options_.use_bias}};
    AddWeightOptions(options_, &c);
    return c;
  }

  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext& ctx) override {
    if (units_ <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, ": units must be positive, got ", units_));
    }
    RW_ASSIGN_OR_RETURN(activation_, ActivationFunction::Parse(options_.activation));
    if (input.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(name_, ": needs an input of rank 1 or more"));
    }
    // Keras' Dense acts on the last axis: each example's rows_ vectors of in_.
    in_ = options_.flatten_input ? NumElements(input) : input.back();
    rows_ = NumElements(input) / std::max<int64_t>(in_, 1);
    RW_RETURN_IF_ERROR(CheckWeightOptions(name_, options_));
    Variable* kernel = AddVariable("kernel", {in_, units_});
    Initialize(options_.kernel_initializer, "glorot_uniform", kernel->value, in_, units_, ctx.seed,
               kernel->name);
    Regularize(options_.kernel_regularizer, kernel);
    // use_bias=false: no variable, as in Keras; the kernel adds zeros.
    if (options_.use_bias) {
      bias_ = AddVariable("bias", {units_});
      // Keras' fans of a bias: its own shape's.
      Initialize(options_.bias_initializer, "zeros", bias_->value, units_, units_, ctx.seed,
                 bias_->name);
      Regularize(options_.bias_regularizer, bias_);
    } else {
      zero_bias_ = Tensor({units_});
    }
    output_shape_ = options_.flatten_input ? Shape{units_} : input;
    output_shape_.back() = units_;
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
    const int64_t batch = x.dim(0);
    RW_ASSIGN_OR_RETURN(DenseKernel * kernel, KernelFor(k, batch * rows_));
    const bool skip_activation = activation_.is_linear() || logits_;
    Tensor* z = skip_activation ? y : &z_;
    Shape shape = {batch};
    shape.insert(shape.end(), output_shape_.begin(), output_shape_.end());
    z->Resize(shape);
    kernel->Forward(k, x.data(), variables_[0]->value.data(),
                    bias_ != nullptr ? bias_->value.data() : zero_bias_.data(), z->data());
    if (!skip_activation) RW_RETURN_IF_ERROR(activation_.Forward(k, z_, y));
    return absl::OkStatus();
  }

  absl::Status Backward(KernelContext& k, const Tensor& x, const Tensor& y, const Tensor& dy,
                        Tensor* dx) override {
    const int64_t batch = x.dim(0);
    RW_ASSIGN_OR_RETURN(DenseKernel * kernel, KernelFor(k, batch * rows_));
    const Tensor* dz = &dy;
    if (!activation_.is_linear() && !logits_) {
      RW_RETURN_IF_ERROR(activation_.Backward(k, z_, y, dy, &dz_));
      dz = &dz_;
    }
    kernel->BackwardWeights(k, x.data(), dz->data(), variables_[0]->grad,
                            bias_ != nullptr ? bias_->grad : nullptr);
    if (dx != nullptr) {
      dx->Resize(x.shape());
      kernel->BackwardData(k, dz->data(), variables_[0]->value.data(), dx->data());
    }
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<DenseKernel*> KernelFor(KernelContext& k, int64_t batch) {
    return kernels_.Get(batch, [&](int64_t b) { return DenseKernel::Create(k, {b, in_, units_}); });
  }

  const int64_t units_;
  const DenseOptions options_;
  int64_t in_ = 0;
  int64_t rows_ = 1;          // Vectors of in_ per example (1 unless acting on a last axis).
  Variable* bias_ = nullptr;  // None with use_bias=false.
  Tensor zero_bias_;          // What the kernel adds then.
  ActivationFunction activation_;
  bool logits_ = false;
  Tensor z_, dz_;  // Pre-activation and its gradient.
  PerBatch<DenseKernel> kernels_;
};

}  // namespace

std::unique_ptr<Layer> Dense(int64_t units, DenseOptions options) {
  return std::make_unique<DenseLayer>(units, std::move(options));
}

}  // namespace ringwork
