// LayerNormalization (kernels/layer_norm.h) and BatchNormalization
// (kernels/batch_norm.h), over the last axis of any input.
#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/shortest_decimal.h"
#include "base/status_macros.h"
#include "keras/layers.h"
#include "kernels/batch_norm.h"
#include "kernels/layer_norm.h"

namespace ringwork {
namespace {

class LayerNormalizationLayer : public Layer {
 public:
  explicit LayerNormalizationLayer(LayerNormalizationOptions options) : options_(options) {}
  nlohmann::json keras_config() const override {
    return {{"axis", -1},
            {"epsilon", options_.epsilon},
            {"center", options_.center},
            {"scale", options_.scale}};
  }
  std::string type() const override { return "LayerNormalization"; }
  MaskUse mask_use() const override { return MaskUse::kPasses; }
  std::string config() const override {
    return absl::StrCat("epsilon ", ShortestDecimal(options_.epsilon),
                        options_.center ? ", center" : "", options_.scale ? ", scale" : "");
  }

  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext&) override {
    if (input.empty() || input.back() <= 0 ||
        (options_.axis != -1 && options_.axis != static_cast<int64_t>(input.size()))) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, " normalizes the last axis (axis -1 or ", input.size(),
                       "), but axis is ", options_.axis, " of an input ", ShapeString(input)));
    }
    if (!(options_.epsilon > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, ": epsilon must be positive, got ", options_.epsilon));
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
                      gamma_ != nullptr ? gamma_->grad : nullptr,
                      beta_ != nullptr ? beta_->grad : nullptr);
    return absl::OkStatus();
  }

 private:
  const LayerNormalizationOptions options_;
  int64_t dim_ = 0;
  Variable* gamma_ = nullptr;  // Owned by variables_.
  Variable* beta_ = nullptr;
  Tensor xhat_, rstd_;
};

// What BatchNormalization and SyncBatchNormalization share: the weights (Keras'
// order and initializers: gamma ones, beta zeros, moving mean zeros, moving
// variance ones), the settings every worker must share, and inference.
class BatchNormBase : public Layer {
 public:
  explicit BatchNormBase(BatchNormalizationOptions options) : options_(options) {}
  nlohmann::json keras_config() const override {
    return {{"axis", -1},
            {"momentum", options_.momentum},
            {"epsilon", options_.epsilon},
            {"center", options_.center},
            {"scale", options_.scale}};
  }
  std::string config() const override {
    return absl::StrCat("momentum ", ShortestDecimal(options_.momentum), ", epsilon ",
                        ShortestDecimal(options_.epsilon), options_.center ? ", center" : "",
                        options_.scale ? ", scale" : "");
  }

  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext&) override {
    if (input.empty() || input.back() <= 0 ||
        (options_.axis != -1 && options_.axis != static_cast<int64_t>(input.size()))) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, " normalizes the last axis (channels: axis -1 or ", input.size(),
                       "), but axis is ", options_.axis, " of an input ", ShapeString(input)));
    }
    if (!(options_.epsilon > 0) || !(options_.momentum >= 0 && options_.momentum <= 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, ": epsilon must be positive and momentum in [0, 1], got ",
                       options_.epsilon, " and ", options_.momentum));
    }
    channels_ = input.back();
    if (options_.scale) {
      gamma_ = AddVariable("gamma", {channels_});
      std::fill(gamma_->value.data(), gamma_->value.data() + channels_, 1.f);
    }
    if (options_.center) beta_ = AddVariable("beta", {channels_});
    moving_mean_ = AddNonTrainableVariable("moving_mean", {channels_});
    moving_variance_ = AddNonTrainableVariable("moving_variance", {channels_});
    std::fill(moving_variance_->value.data(), moving_variance_->value.data() + channels_, 1.f);
    output_shape_ = input;
    return output_shape_;
  }

 protected:
  const float* gamma() const { return gamma_ != nullptr ? gamma_->value.data() : nullptr; }
  const float* beta() const { return beta_ != nullptr ? beta_->value.data() : nullptr; }
  void Infer(const Tensor& x, Tensor* y) const {
    BatchNormInfer(x.data(), gamma(), beta(), moving_mean_->value.data(),
                   moving_variance_->value.data(), x.size() / channels_, channels_,
                   options_.epsilon, y->data());
  }
  // The input's gradient of Infer: dy times gamma / sqrt(moving variance + epsilon).
  void InferBackward(const Tensor& dy, Tensor* dx) const {
    std::vector<float> scale(static_cast<size_t>(channels_));
    for (int64_t c = 0; c < channels_; ++c) {
      scale[c] = (gamma() != nullptr ? gamma()[c] : 1.0f) /
                 std::sqrt(moving_variance_->value[c] + options_.epsilon);
    }
    for (int64_t i = 0; i < dy.size(); ++i) (*dx)[i] = dy[i] * scale[i % channels_];
  }
  void UpdateMoving(const double* totals) {
    UpdateMovingStatistics(totals, channels_, options_.momentum, moving_mean_->value.data(),
                           moving_variance_->value.data());
  }

  const BatchNormalizationOptions options_;
  int64_t channels_ = 0;
  Variable* gamma_ = nullptr;  // Owned by the layer's variables.
  Variable* beta_ = nullptr;
  Variable* moving_mean_ = nullptr;
  Variable* moving_variance_ = nullptr;
};

class BatchNormalizationLayer : public BatchNormBase {
 public:
  explicit BatchNormalizationLayer(BatchNormalizationOptions options) : BatchNormBase(options) {}
  std::string type() const override { return "BatchNormalization"; }

  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext& ctx) override {
    RW_ASSIGN_OR_RETURN(Shape out, BatchNormBase::Build(input, ctx));
    sums_.assign(static_cast<size_t>(1 + 2 * channels_), 0.0);
    return out;
  }

  absl::Status Forward(KernelContext&, const Tensor& x, Tensor* y, bool training) override {
    y->Resize(x.shape());
    if (!training || !trainable_) {  // Frozen: Keras normalizes as in inference.
      Infer(x, y);
      return absl::OkStatus();
    }
    const int64_t rows = x.size() / channels_;
    xhat_.Resize(x.shape());
    rstd_.Resize({channels_});
    BatchNormTrain(x.data(), gamma(), beta(), rows, channels_, options_.epsilon, y->data(),
                   xhat_.data(), rstd_.data(), sums_.data());
    return absl::OkStatus();
  }

  absl::Status Backward(KernelContext&, const Tensor& x, const Tensor&, const Tensor& dy,
                        Tensor* dx) override {
    if (dx != nullptr) dx->Resize(x.shape());
    if (!trainable_) {
      if (dx != nullptr) InferBackward(dy, dx);
      return absl::OkStatus();
    }
    BatchNormBackward(dy.data(), gamma(), xhat_.data(), rstd_.data(), x.size() / channels_,
                      channels_, dx != nullptr ? dx->data() : nullptr,
                      gamma_ != nullptr ? gamma_->grad : nullptr,
                      beta_ != nullptr ? beta_->grad : nullptr);
    return absl::OkStatus();
  }

  // [rows, sum(x) per channel, sum(x^2) per channel] of the last training batch;
  // none when frozen (the moving statistics stay).
  int64_t batch_sums_size() const override { return trainable_ ? 1 + 2 * channels_ : 0; }
  void BatchSums(double* out) const override { std::copy(sums_.begin(), sums_.end(), out); }
  void UpdateFromBatchSums(const double* totals) override { UpdateMoving(totals); }

 private:
  Tensor xhat_, rstd_;
  std::vector<double> sums_;  // [rows, sum(x), sum(x^2)] of the last training batch.
};

// Batch statistics over the global batch: the sums of every replica's batch in
// forward, the sums of every replica's gradients in backward (TensorFlow's
// SyncBatchNormalization). A replica's gradient sums are scaled by its share of
// the global rows, so that its input gradient is that of its own loss (the frame
// the gradient reducer averages in).
class SyncBatchNormalizationLayer : public BatchNormBase {
 public:
  explicit SyncBatchNormalizationLayer(BatchNormalizationOptions options)
      : BatchNormBase(options) {}
  std::string type() const override { return "SyncBatchNormalization"; }
  bool sums_over_replicas() const override { return true; }

  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext& ctx) override {
    if (!ctx.sum_over_replicas)
      return absl::InternalError(absl::StrCat(name_, ": built without a way to sum over replicas"));
    sum_ = ctx.sum_over_replicas;
    if (!trainable_) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_,
                       ": a frozen SyncBatchNormalization is not supported yet; freeze a "
                       "BatchNormalization (frozen, it no longer uses the batch's statistics)"));
    }
    return BatchNormBase::Build(input, ctx);
  }

  absl::Status Forward(KernelContext&, const Tensor& x, Tensor* y, bool training) override {
    y->Resize(x.shape());
    if (!training || !trainable_) {  // Frozen: Keras normalizes as in inference.
      Infer(x, y);
      return absl::OkStatus();
    }
    const int64_t rows = x.size() / channels_;
    std::vector<double> sums(static_cast<size_t>(1 + 2 * channels_));
    BatchNormSums(x.data(), rows, channels_, sums.data());
    RW_RETURN_IF_ERROR(sum_(sums.data(), static_cast<int64_t>(sums.size())));
    rows_ = rows;
    global_rows_ = sums[0];
    mean_.Resize({channels_});
    rstd_.Resize({channels_});
    BatchNormStatisticsFromSums(sums.data(), channels_, options_.epsilon, mean_.data(),
                                rstd_.data());
    xhat_.Resize(x.shape());
    BatchNormNormalize(x.data(), gamma(), beta(), mean_.data(), rstd_.data(), rows, channels_,
                       y->data(), xhat_.data());
    pending_moving_sums_ = std::move(sums);  // Applied when the step commits.
    return absl::OkStatus();
  }

  void CommitStep() override {
    if (pending_moving_sums_.empty()) return;
    UpdateMoving(pending_moving_sums_.data());
    pending_moving_sums_.clear();
  }

  absl::Status Backward(KernelContext&, const Tensor& x, const Tensor&, const Tensor& dy,
                        Tensor* dx) override {
    std::vector<double> sums(static_cast<size_t>(2 * channels_));
    // dgamma, dbeta: this replica's own (the reducer averages them).
    BatchNormGradientSums(dy.data(), xhat_.data(), rows_, channels_, 1.0, sums.data());
    for (int64_t c = 0; c < channels_; ++c) {
      if (beta_ != nullptr) beta_->grad[c] = static_cast<float>(sums[c]);
      if (gamma_ != nullptr) gamma_->grad[c] = static_cast<float>(sums[channels_ + c]);
    }
    for (double& s : sums) s *= static_cast<double>(rows_) / global_rows_;
    RW_RETURN_IF_ERROR(sum_(sums.data(), static_cast<int64_t>(sums.size())));
    if (dx != nullptr) {
      dx->Resize(x.shape());
      BatchNormInputGradient(dy.data(), gamma(), xhat_.data(), rstd_.data(), sums.data(), rows_,
                             channels_, dx->data());
    }
    return absl::OkStatus();
  }

  absl::Status JoinWithoutBatch(bool forward) override {
    // Zeros in the same sums the others add (the forward's moving statistics
    // update alike from them).
    std::vector<double> sums(static_cast<size_t>(forward ? 1 + 2 * channels_ : 2 * channels_), 0.0);
    RW_RETURN_IF_ERROR(sum_(sums.data(), static_cast<int64_t>(sums.size())));
    if (forward) pending_moving_sums_ = std::move(sums);
    return absl::OkStatus();
  }

 private:
  std::function<absl::Status(double*, int64_t)> sum_;
  // The global batch's sums of the step's Forward, for the moving statistics.
  std::vector<double> pending_moving_sums_;
  int64_t rows_ = 0;
  double global_rows_ = 0;
  Tensor mean_, rstd_, xhat_;
};

}  // namespace

std::unique_ptr<Layer> SyncBatchNormalization(BatchNormalizationOptions options) {
  return std::make_unique<SyncBatchNormalizationLayer>(options);
}

std::unique_ptr<Layer> BatchNormalization(BatchNormalizationOptions options) {
  return std::make_unique<BatchNormalizationLayer>(options);
}

std::unique_ptr<Layer> LayerNormalization(LayerNormalizationOptions options) {
  return std::make_unique<LayerNormalizationLayer>(options);
}

}  // namespace ringwork
