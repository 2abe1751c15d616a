// Add, Multiply and Concatenate: the merge layers of the functional API.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "keras/layers.h"

namespace ringwork {
namespace {

std::string Shapes(const std::vector<Shape>& shapes) {
  std::vector<std::string> text;
  for (const Shape& s : shapes) text.push_back(ShapeString(s));
  return absl::StrJoin(text, " and ");
}

// Add and Multiply: inputs of one shape, combined element by element.
class ElementwiseLayer : public MergeLayer {
 public:
  explicit ElementwiseLayer(bool multiply) : multiply_(multiply) {}
  std::string type() const override { return multiply_ ? "Multiply" : "Add"; }

  absl::StatusOr<Shape> BuildMerge(const std::vector<Shape>& inputs) override {
    for (const Shape& s : inputs) {
      if (s != inputs[0]) {
        return absl::InvalidArgumentError(
            absl::StrCat(name_, " (", type(), ") needs inputs of one shape, got ", Shapes(inputs)));
      }
    }
    output_shape_ = inputs[0];
    return output_shape_;
  }

  absl::Status ForwardMerge(KernelContext&, const std::vector<const Tensor*>& xs,
                            Tensor* y) override {
    y->Resize(xs[0]->shape());
    float* out = y->data();
    const float* first = xs[0]->data();
    size_t next = 1;
    if (xs.size() >= 2) {  // One pass for the first two (a residual connection's add).
      const float* second = xs[1]->data();
      if (multiply_) {
        for (int64_t e = 0; e < y->size(); ++e) out[e] = first[e] * second[e];
      } else {
        for (int64_t e = 0; e < y->size(); ++e) out[e] = first[e] + second[e];
      }
      next = 2;
    } else {
      std::memcpy(out, first, sizeof(float) * xs[0]->size());
    }
    for (size_t i = next; i < xs.size(); ++i) {
      const float* x = xs[i]->data();
      if (multiply_) {
        for (int64_t e = 0; e < y->size(); ++e) out[e] *= x[e];
      } else {
        for (int64_t e = 0; e < y->size(); ++e) out[e] += x[e];
      }
    }
    return absl::OkStatus();
  }

  absl::Status BackwardMerge(KernelContext&, const std::vector<const Tensor*>& xs, const Tensor& dy,
                             const std::vector<Tensor*>& dxs) override {
    for (size_t i = 0; i < xs.size(); ++i) {
      if (dxs[i] == nullptr) continue;
      dxs[i]->Resize(dy.shape());
      float* dx = dxs[i]->data();
      std::memcpy(dx, dy.data(), sizeof(float) * dy.size());
      if (!multiply_) continue;
      // d(x_0 * ... * x_n)/dx_i: the product of the others.
      for (size_t j = 0; j < xs.size(); ++j) {
        if (j == i) continue;
        const float* x = xs[j]->data();
        for (int64_t e = 0; e < dy.size(); ++e) dx[e] *= x[e];
      }
    }
    return absl::OkStatus();
  }

 private:
  const bool multiply_;
};

// Along the last axis: every other dimension must agree.
class ConcatenateLayer : public MergeLayer {
 public:
  std::string type() const override { return "Concatenate"; }
  nlohmann::json keras_config() const override { return {{"axis", -1}}; }

  absl::StatusOr<Shape> BuildMerge(const std::vector<Shape>& inputs) override {
    // Every shape is checked before one is read.
    for (const Shape& s : inputs) {
      if (s.empty() || s.size() != inputs[0].size() ||
          !std::equal(s.begin(), s.end() - 1, inputs[0].begin())) {
        return absl::InvalidArgumentError(absl::StrCat(
            name_, " (Concatenate) joins the last axis, so every other dimension must match; got ",
            Shapes(inputs)));
      }
    }
    widths_.clear();
    output_shape_ = inputs[0];
    output_shape_.back() = 0;
    for (const Shape& s : inputs) {
      widths_.push_back(s.back());
      output_shape_.back() += s.back();
    }
    rows_per_example_ = 1;
    for (size_t d = 0; d + 1 < output_shape_.size(); ++d) rows_per_example_ *= output_shape_[d];
    return output_shape_;
  }

  absl::Status ForwardMerge(KernelContext&, const std::vector<const Tensor*>& xs,
                            Tensor* y) override {
    // Rows from the batch, not from a width (which may be 0).
    const int64_t total = output_shape_.back(), rows = xs[0]->dim(0) * rows_per_example_;
    y->Resize(WithBatch(xs[0]->dim(0), output_shape_));
    int64_t offset = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      for (int64_t r = 0; r < rows; ++r) {
        std::memcpy(y->data() + r * total + offset, xs[i]->data() + r * widths_[i],
                    sizeof(float) * widths_[i]);
      }
      offset += widths_[i];
    }
    return absl::OkStatus();
  }

  absl::Status BackwardMerge(KernelContext&, const std::vector<const Tensor*>& xs, const Tensor& dy,
                             const std::vector<Tensor*>& dxs) override {
    const int64_t total = output_shape_.back(), rows = dy.dim(0) * rows_per_example_;
    int64_t offset = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      if (dxs[i] != nullptr) {
        dxs[i]->Resize(xs[i]->shape());
        for (int64_t r = 0; r < rows; ++r) {
          std::memcpy(dxs[i]->data() + r * widths_[i], dy.data() + r * total + offset,
                      sizeof(float) * widths_[i]);
        }
      }
      offset += widths_[i];
    }
    return absl::OkStatus();
  }

 private:
  std::vector<int64_t> widths_;
  int64_t rows_per_example_ = 1;  // The product of the dimensions before the last.
};

}  // namespace

std::unique_ptr<Layer> Add() { return std::make_unique<ElementwiseLayer>(false); }
std::unique_ptr<Layer> Multiply() { return std::make_unique<ElementwiseLayer>(true); }
std::unique_ptr<Layer> Concatenate() { return std::make_unique<ConcatenateLayer>(); }

}  // namespace ringwork
