// LayerNormalization (kernels/layer_norm.h) and BatchNormalization
// (kernels/batch_norm.h), over the last axis of any input.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/shortest_decimal.h"
#include "keras/layers.h"
#include "kernels/batch_norm.h"
#include "kernels/layer_norm.h"

namespace ringwork {
namespace {

class LayerNormalizationLayer : public Layer {
 public:
  explicit LayerNormalizationLayer(LayerNormalizationOptions options) : options_(options) {}
  std::string type() const override { return "LayerNormalization"; }
  std::string config() const override {
    return absl::StrCat("epsilon ", ShortestDecimal(options_.epsilon), options_.center ? ", center" : "",
                        options_.scale ? ", scale" : "");
  }

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

class BatchNormalizationLayer : public Layer {
 public:
  explicit BatchNormalizationLayer(BatchNormalizationOptions options) : options_(options) {}
  std::string type() const override { return "BatchNormalization"; }
  std::string config() const override {
    return absl::StrCat("momentum ", ShortestDecimal(options_.momentum), ", epsilon ",
                        ShortestDecimal(options_.epsilon), options_.center ? ", center" : "",
                        options_.scale ? ", scale" : "");
  }

  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext&) override {
    if (input.empty() || input.back() <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, " normalizes the last axis (channels), but the input is ", ShapeString(input)));
    }
    if (!(options_.epsilon > 0) || !(options_.momentum >= 0 && options_.momentum <= 1)) {
      return absl::InvalidArgumentError(absl::StrCat(name_, ": epsilon must be positive and momentum in [0, 1], got ",
                                                     options_.epsilon, " and ", options_.momentum));
    }
    channels_ = input.back();
    // Keras' order and initializers: gamma ones, beta zeros, moving mean zeros,
    // moving variance ones.
    if (options_.scale) {
      gamma_ = AddVariable("gamma", {channels_});
      std::fill(gamma_->value.data(), gamma_->value.data() + channels_, 1.f);
    }
    if (options_.center) beta_ = AddVariable("beta", {channels_});
    moving_mean_ = AddNonTrainableVariable("moving_mean", {channels_});
    moving_variance_ = AddNonTrainableVariable("moving_variance", {channels_});
    std::fill(moving_variance_->value.data(), moving_variance_->value.data() + channels_, 1.f);
    sums_.assign(static_cast<size_t>(2 * channels_), 0.0);
    output_shape_ = input;
    return output_shape_;
  }

  absl::Status Forward(KernelContext&, const Tensor& x, Tensor* y, bool training) override {
    const int64_t rows = x.size() / channels_;
    y->Resize(x.shape());
    const float* gamma = gamma_ != nullptr ? gamma_->value.data() : nullptr;
    const float* beta = beta_ != nullptr ? beta_->value.data() : nullptr;
    if (!training) {
      BatchNormInfer(x.data(), gamma, beta, moving_mean_->value.data(), moving_variance_->value.data(),
                     rows, channels_, options_.epsilon, y->data());
      return absl::OkStatus();
    }
    xhat_.Resize(x.shape());
    rstd_.Resize({channels_});
    BatchNormTrain(x.data(), gamma, beta, rows, channels_, options_.epsilon, y->data(), xhat_.data(),
                   rstd_.data(), sums_.data());
    rows_ = rows;
    return absl::OkStatus();
  }

  absl::Status Backward(KernelContext&, const Tensor& x, const Tensor&, const Tensor& dy,
                        Tensor* dx) override {
    if (dx != nullptr) dx->Resize(x.shape());
    BatchNormBackward(dy.data(), gamma_ != nullptr ? gamma_->value.data() : nullptr, xhat_.data(),
                      rstd_.data(), x.size() / channels_, channels_, dx != nullptr ? dx->data() : nullptr,
                      gamma_ != nullptr ? gamma_->grad : nullptr, beta_ != nullptr ? beta_->grad : nullptr);
    return absl::OkStatus();
  }

  // [rows, sum(x) per channel, sum(x^2) per channel] of the last training batch.
  int64_t batch_sums_size() const override { return 1 + 2 * channels_; }
  void BatchSums(double* out) const override {
    out[0] = static_cast<double>(rows_);
    std::copy(sums_.begin(), sums_.end(), out + 1);
  }
  void UpdateFromBatchSums(const double* totals) override {
    UpdateMovingStatistics(totals, channels_, options_.momentum, moving_mean_->value.data(),
                           moving_variance_->value.data());
  }

 private:
  const BatchNormalizationOptions options_;
  int64_t channels_ = 0, rows_ = 0;
  Variable* gamma_ = nullptr;  // Owned by the layer's variables.
  Variable* beta_ = nullptr;
  Variable* moving_mean_ = nullptr;
  Variable* moving_variance_ = nullptr;
  Tensor xhat_, rstd_;
  std::vector<double> sums_;
};

}  // namespace

std::unique_ptr<Layer> BatchNormalization(BatchNormalizationOptions options) {
  return std::make_unique<BatchNormalizationLayer>(options);
}

std::unique_ptr<Layer> LayerNormalization(LayerNormalizationOptions options) {
  return std::make_unique<LayerNormalizationLayer>(options);
}

}  // namespace ringwork
