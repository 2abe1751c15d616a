// LayerNormalization (kernels/layer_norm.h) over the last axis of any input.
#include "absl/strings/str_cat.h"
#include "keras/layers.h"
#include "kernels/layer_norm.h"

namespace ringwork {
namespace {

class LayerNormalizationLayer : public Layer {
 public:
  explicit LayerNormalizationLayer(LayerNormalizationOptions options) : options_(options) {}
  std::string type() const override { return "LayerNormalization"; }

  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext&) override {
    if (input.empty() || input.back() <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, " normalizes the last axis, but the input is ", ShapeString(input)));
    }
    if (!(options_.epsilon > 0)) {
      return absl::InvalidArgumentError(absl::StrCat(name_, ": epsilon must be positive, got ", options_.epsilon));
    }
    dim_ = input.back();
    // Keras' order and initializers: gamma ones, beta zeros.
    if (options_.scale) {
      gamma_ = AddVariable("gamma", {dim_});
      std::fill(gamma_->value.data(), gamma_->value.data() + dim_, 1.f);
    }
    if (options_.center) beta_ = AddVariable("beta", {dim_});
    output_shape_ = input;
    return output_shape_;
  }

  absl::Status Forward(KernelContext&, const Tensor& x, Tensor* y, bool) override {
    const int64_t rows = x.size() / dim_;
    y->Resize(x.shape());
    xhat_.Resize(x.shape());
    rstd_.Resize({rows});
    LayerNormForward(x.data(), gamma_ != nullptr ? gamma_->value.data() : nullptr,
                     beta_ != nullptr ? beta_->value.data() : nullptr, rows, dim_, options_.epsilon,
                     y->data(), xhat_.data(), rstd_.data());
    return absl::OkStatus();
  }

  absl::Status Backward(KernelContext&, const Tensor& x, const Tensor&, const Tensor& dy,
                        Tensor* dx) override {
    if (dx != nullptr) dx->Resize(x.shape());
    LayerNormBackward(dy.data(), gamma_ != nullptr ? gamma_->value.data() : nullptr, xhat_.data(),
                      rstd_.data(), x.size() / dim_, dim_, dx != nullptr ? dx->data() : nullptr,
                      gamma_ != nullptr ? gamma_->grad : nullptr, beta_ != nullptr ? beta_->grad : nullptr);
    return absl::OkStatus();
  }

 private:
  const LayerNormalizationOptions options_;
  int64_t dim_ = 0;
  Variable* gamma_ = nullptr;  // Owned by variables_.
  Variable* beta_ = nullptr;
  Tensor xhat_, rstd_;
};

}  // namespace

std::unique_ptr<Layer> LayerNormalization(LayerNormalizationOptions options) {
  return std::make_unique<LayerNormalizationLayer>(options);
}

}  // namespace ringwork
