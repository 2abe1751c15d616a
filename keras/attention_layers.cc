// MultiHeadAttention (self-attention, as Keras' layer called as mha(x, x)) and
// PositionEmbedding, over [steps, features] sequences. The projections are
// oneDNN matmuls over every example's steps at once; the attention of each
// example and head is kernels/attention.h's loops (steps are few).
#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "keras/initializers.h"
#include "keras/kernel_cache.h"
#include "keras/layers.h"
#include "kernels/attention.h"
#include "kernels/dense.h"

namespace ringwork {
namespace {

class MultiHeadAttentionLayer : public Layer {
 public:
  MultiHeadAttentionLayer(int64_t heads, int64_t key_dim, AttentionOptions options)
      : heads_(heads), key_dim_(key_dim), options_(options) {}
  std::string type() const override { return "MultiHeadAttention"; }
  // Padding steps are keys no step attends to (Keras' attention mask of the
  // input's mask); the output carries the mask on. Keras also masks the padding
  // queries' rows (uniform weights there); those outputs reach only layers that
  // skip masked steps, so Ringwork attends from them as from any step.
  MaskUse mask_use() const override { return MaskUse::kReadsAndPasses; }
  void set_input_mask(const uint8_t* mask) override { mask_ = mask; }
  nlohmann::json keras_config() const override {
    return {{"num_heads", heads_},      {"key_dim", key_dim_}, {"value_dim", value_dim_},
            {"dropout", 0.0},           {"use_bias", true},    {"output_shape", nullptr},
            {"attention_axes", nullptr}};
  }

  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext& ctx) override {
    if (input.size() != 2 || input[0] <= 0 || input[1] <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          name_, " (MultiHeadAttention) needs [steps, features] inputs, got ", ShapeString(input)));
    }
    if (heads_ <= 0 || key_dim_ <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          name_, ": num_heads and key_dim must be positive, got ", heads_, " and ", key_dim_));
    }
    steps_ = input[0];
    features_ = input[1];
    value_dim_ = options_.value_dim > 0 ? options_.value_dim : key_dim_;
    // Keras' shapes: query/key/value kernels [features, heads, dim], biases [heads,
    // dim]; the output kernel [heads, value_dim, features], its bias [features].
    const std::pair<const char*, int64_t> projections[] = {
        {"query", key_dim_}, {"key", key_dim_}, {"value", value_dim_}};
    for (const auto& [part, dim] : projections) {
      Variable* kernel = AddVariable(absl::StrCat(part, "/kernel"), {features_, heads_, dim});
      // Keras' fans of a [features, heads, dim] kernel: heads x features in, dim x features out.
      GlorotUniform(kernel->value, heads_ * features_, dim * features_, ctx.seed, kernel->name);
      AddVariable(absl::StrCat(part, "/bias"), {heads_, dim});
    }
    Variable* out = AddVariable("attention_output/kernel", {heads_, value_dim_, features_});
    GlorotUniform(out->value, value_dim_ * heads_, features_ * heads_, ctx.seed, out->name);
    AddVariable("attention_output/bias", {features_});
    output_shape_ = input;
    return output_shape_;
  }

  absl::Status Forward(KernelContext& k, const Tensor& x, Tensor* y, bool) override {
    const int64_t batch = x.dim(0), rows = batch * steps_;
    const int64_t qk = heads_ * key_dim_, v = heads_ * value_dim_;
    q_.resize(static_cast<size_t>(rows * qk));
    k_.resize(q_.size());
    v_.resize(static_cast<size_t>(rows * v));
    RW_ASSIGN_OR_RETURN(DenseKernel * to_qk, Matmul(k, rows, features_, qk));
    RW_ASSIGN_OR_RETURN(DenseKernel * to_v, Matmul(k, rows, features_, v));
    to_qk->Forward(k, x.data(), Value(0), Value(1), q_.data());
    to_qk->Forward(k, x.data(), Value(2), Value(3), k_.data());
    to_v->Forward(k, x.data(), Value(4), Value(5), v_.data());
    // probabilities_[b][h][i][j]: how much step i attends to step j.
    probabilities_.resize(static_cast<size_t>(batch * heads_ * steps_ * steps_));
    context_.resize(static_cast<size_t>(rows * v));
    AttentionForward(Dims(batch), q_.data(), k_.data(), v_.data(), probabilities_.data(),
                     context_.data(), mask_);
    y->Resize(x.shape());
    RW_ASSIGN_OR_RETURN(DenseKernel * out, Matmul(k, rows, v, features_));
    out->Forward(k, context_.data(), Value(6), Value(7), y->data());
    return absl::OkStatus();
  }

  absl::Status Backward(KernelContext& k, const Tensor& x, const Tensor&, const Tensor& dy,
                        Tensor* dx) override {
    const int64_t batch = x.dim(0), rows = batch * steps_;
    const int64_t qk = heads_ * key_dim_, v = heads_ * value_dim_;
    RW_ASSIGN_OR_RETURN(DenseKernel * out, Matmul(k, rows, v, features_));
    out->BackwardWeights(k, context_.data(), dy.data(), Grad(6), Grad(7));
    dcontext_.resize(static_cast<size_t>(rows * v));
    out->BackwardData(k, dy.data(), Value(6), dcontext_.data());
    dq_.resize(q_.size());
    dk_.resize(k_.size());
    dv_.resize(v_.size());
    AttentionBackward(Dims(batch), q_.data(), k_.data(), v_.data(), probabilities_.data(),
                      dcontext_.data(), dq_.data(), dk_.data(), dv_.data());
    RW_ASSIGN_OR_RETURN(DenseKernel * to_qk, Matmul(k, rows, features_, qk));
    RW_ASSIGN_OR_RETURN(DenseKernel * to_v, Matmul(k, rows, features_, v));
    to_qk->BackwardWeights(k, x.data(), dq_.data(), Grad(0), Grad(1));
    to_qk->BackwardWeights(k, x.data(), dk_.data(), Grad(2), Grad(3));
    to_v->BackwardWeights(k, x.data(), dv_.data(), Grad(4), Grad(5));
    if (dx != nullptr) {
      dx->Resize(x.shape());
      part_.resize(static_cast<size_t>(x.size()));
      to_qk->BackwardData(k, dq_.data(), Value(0), dx->data());
      to_qk->BackwardData(k, dk_.data(), Value(2), part_.data());
      for (int64_t i = 0; i < x.size(); ++i) dx->data()[i] += part_[i];
      to_v->BackwardData(k, dv_.data(), Value(4), part_.data());
      for (int64_t i = 0; i < x.size(); ++i) dx->data()[i] += part_[i];
    }
    return absl::OkStatus();
  }

 private:
  AttentionShape Dims(int64_t batch) const { return {batch, steps_, heads_, key_dim_, value_dim_}; }
  const float* Value(size_t i) const { return variables_[i]->value.data(); }
  float* Grad(size_t i) const { return variables_[i]->grad; }
  absl::StatusOr<DenseKernel*> Matmul(KernelContext& k, int64_t rows, int64_t in, int64_t out) {
    return matmuls_.Get(MatmulShape{rows, in, out}, [&](const MatmulShape&) {
      return DenseKernel::Create(k, {rows, in, out});
    });
  }

  const int64_t heads_, key_dim_;
  const AttentionOptions options_;
  int64_t value_dim_ = 0, steps_ = 0, features_ = 0;
  // Of the last Forward: the projections ([rows, heads x dim]), the attention
  // probabilities and the heads' outputs side by side.
  std::vector<float> q_, k_, v_, probabilities_, context_;
  std::vector<float> dcontext_, dq_, dk_, dv_, part_;  // Backward's, kept between steps.
  PerBatch<DenseKernel, MatmulShape> matmuls_;
  const uint8_t* mask_ = nullptr;  // [batch, steps] of the next Forward, or null.
};

// x + a learned embedding of each step's position.
class PositionEmbeddingLayer : public Layer {
 public:
  explicit PositionEmbeddingLayer(int64_t sequence_length) : length_(sequence_length) {}
  std::string type() const override { return "PositionEmbedding"; }
  MaskUse mask_use() const override { return MaskUse::kPasses; }
  nlohmann::json keras_config() const override { return {{"sequence_length", length_}}; }
  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext& ctx) override {
    if (input.size() != 2 || input[0] <= 0 || input[0] > length_ || input[1] <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, " (PositionEmbedding of ", length_,
                       " positions) needs [steps, features] inputs of at most ", length_,
                       " steps, got ", ShapeString(input)));
    }
    Variable* table = AddVariable("embeddings", {length_, input[1]});
    GlorotUniform(table->value, length_, input[1], ctx.seed, table->name);
    output_shape_ = input;
    return output_shape_;
  }
  absl::Status Forward(KernelContext&, const Tensor& x, Tensor* y, bool) override {
    y->Resize(x.shape());
    const int64_t per_example = NumElements(output_shape_);
    const float* table = variables_[0]->value.data();
    for (int64_t b = 0; b < x.dim(0); ++b) {
      for (int64_t i = 0; i < per_example; ++i) {
        y->data()[b * per_example + i] = x.data()[b * per_example + i] + table[i];
      }
    }
    return absl::OkStatus();
  }
  absl::Status Backward(KernelContext&, const Tensor& x, const Tensor&, const Tensor& dy,
                        Tensor* dx) override {
    const int64_t per_example = NumElements(output_shape_);
    float* grad = variables_[0]->grad;
    std::fill(grad, grad + variables_[0]->size(), 0.f);
    for (int64_t b = 0; b < x.dim(0); ++b) {
      for (int64_t i = 0; i < per_example; ++i) grad[i] += dy.data()[b * per_example + i];
    }
    if (dx != nullptr) *dx = dy;
    return absl::OkStatus();
  }

 private:
  const int64_t length_;
};

}  // namespace

std::unique_ptr<Layer> MultiHeadAttention(int64_t num_heads, int64_t key_dim,
                                          AttentionOptions options) {
  return std::make_unique<MultiHeadAttentionLayer>(num_heads, key_dim, options);
}
std::unique_ptr<Layer> PositionEmbedding(int64_t sequence_length) {
  return std::make_unique<PositionEmbeddingLayer>(sequence_length);
}

}  // namespace ringwork
