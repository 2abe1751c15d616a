// Embedding: integer ids (stored as floats in the input) -> rows of a trained table.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "keras/initializers.h"
#include "keras/layers.h"

namespace ringwork {
namespace {

class EmbeddingLayer : public Layer {
 public:
  EmbeddingLayer(int64_t input_dim, int64_t output_dim, EmbeddingOptions options)
      : input_dim_(input_dim), output_dim_(output_dim), options_(options) {}
  std::string type() const override { return "Embedding"; }
  nlohmann::json keras_config() const override {
    nlohmann::json c = {{"input_dim", input_dim_}, {"output_dim", output_dim_}};
    if (!options_.embeddings_initializer.name.empty()) {
      c["embeddings_initializer"] = KerasJson(options_.embeddings_initializer);
    }
    if (options_.mask_zero) c["mask_zero"] = true;
    return c;
  }
  std::string config() const override { return options_.mask_zero ? "mask_zero" : ""; }
  bool makes_mask() const override { return options_.mask_zero; }
  void MakeMask(const Tensor& x, std::vector<uint8_t>* mask) const override {
    mask->resize(static_cast<size_t>(x.size()));
    for (int64_t i = 0; i < x.size(); ++i) (*mask)[i] = x.data()[i] != 0.f;
  }

  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext& ctx) override {
    if (input_dim_ <= 0 || output_dim_ <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, ": input_dim and output_dim must be positive, got ", input_dim_,
                       " and ", output_dim_));
    }
    if (input_dim_ > (int64_t{1} << 24)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, ": input_dim ", input_dim_,
                       " is above 2^24, the largest id a float input holds exactly"));
    }
    if (options_.mask_zero && input.size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          name_, ": mask_zero masks steps, and needs [steps] ids, got ", ShapeString(input)));
    }
    table_ = AddVariable("embeddings", {input_dim_, output_dim_});
    table_->sparse_gradient = true;
    RW_RETURN_IF_ERROR(CheckInitializer(options_.embeddings_initializer, name_));
    if (options_.embeddings_initializer.name.empty()) {
      RandomUniform(table_->value, options_.uniform_limit, ctx.seed, table_->name);
    } else {
      Initialize(options_.embeddings_initializer, "", table_->value, input_dim_, output_dim_,
                 ctx.seed, table_->name);
    }
    output_shape_ = input;
    output_shape_.push_back(output_dim_);
    return output_shape_;
  }

  absl::Status Forward(KernelContext&, const Tensor& x, Tensor* y, bool) override {
    y->Resize(WithBatch(x.dim(0), output_shape_));
    ids_.resize(static_cast<size_t>(x.size()));
    for (int64_t i = 0; i < x.size(); ++i) {
      const float id = x.data()[i];
      if (!(id >= 0 && id < static_cast<float>(input_dim_) && id == std::floor(id))) {
        return absl::InvalidArgumentError(
            absl::StrCat(name_, ": input value ", id, " (example ",
                         i / std::max<int64_t>(1, x.size() / x.dim(0)),
                         " of the batch) is not an id in [0, ", input_dim_, ")"));
      }
      ids_[i] = static_cast<int64_t>(id);
      std::memcpy(y->data() + i * output_dim_, table_->value.data() + ids_[i] * output_dim_,
                  sizeof(float) * output_dim_);
    }
    return absl::OkStatus();
  }

  absl::Status Backward(KernelContext&, const Tensor& x, const Tensor&, const Tensor& dy,
                        Tensor* dx) override {
    // The table's gradient is zero but for the rows of this batch's ids.
    std::fill(table_->grad, table_->grad + table_->size(), 0.f);
    for (size_t i = 0; i < ids_.size(); ++i) {
      float* row = table_->grad + ids_[i] * output_dim_;
      const float* g = dy.data() + i * output_dim_;
      for (int64_t d = 0; d < output_dim_; ++d) row[d] += g[d];
    }
    std::vector<int64_t>& rows = table_->touched_rows;
    rows.assign(ids_.begin(), ids_.end());
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    if (dx != nullptr) {  // Ids have no gradient.
      dx->Resize(x.shape());
      std::fill(dx->data(), dx->data() + dx->size(), 0.f);
    }
    return absl::OkStatus();
  }

 private:
  const int64_t input_dim_, output_dim_;
  const EmbeddingOptions options_;
  Variable* table_ = nullptr;  // Owned by variables_.
  std::vector<int64_t> ids_;   // Of the last forward.
};

}  // namespace

std::unique_ptr<Layer> Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options) {
  return std::make_unique<EmbeddingLayer>(input_dim, output_dim, options);
}

}  // namespace ringwork
