// Batch and PaddedBatch: elements stacked along a new leading dimension.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "data/pipeline/pipeline.h"

namespace ringwork {
namespace {

// `value` (of `count` elements) as double `v`, at position i.
void StorePadding(TypedTensor* t, int64_t i, double v) {
  switch (t->type()) {
    case ValueType::kFloat32:
      t->data<float>()[i] = static_cast<float>(v);
      return;
    case ValueType::kInt32:
      t->data<int32_t>()[i] = static_cast<int32_t>(v);
      return;
    case ValueType::kInt64:
      t->data<int64_t>()[i] = static_cast<int64_t>(v);
      return;
    case ValueType::kUInt8:
      t->data<uint8_t>()[i] = static_cast<uint8_t>(v);
      return;
    case ValueType::kString:
      return;
  }
}

class BatchNode : public PipelineNode {
 public:
  BatchNode(std::shared_ptr<const PipelineNode> input, int64_t count, bool drop_remainder,
            bool padded, std::vector<double> padding)
      : input_(std::move(input)),
        count_(std::max<int64_t>(count, 1)),
        drop_remainder_(drop_remainder),
        padded_(padded),
        padding_(std::move(padding)) {
    for (const FeatureInfo& f : input_->spec()) {
      FeatureInfo b = f;
      b.shape.insert(b.shape.begin(), drop_remainder ? count_ : -1);
      spec_.push_back(std::move(b));
    }
  }
  const ElementSpec& spec() const override { return spec_; }
  std::shared_ptr<const PipelineNode> input() const override { return input_; }
  int64_t file_count() const override { return input_->file_count(); }
  std::string name() const override { return padded_ ? "padded_batch" : "batch"; }
  int64_t cardinality() const override {
    const int64_t in = input_->cardinality();
    if (in < 0) return -1;
    return drop_remainder_ ? in / count_ : (in + count_ - 1) / count_;
  }
  int64_t batch_size() const { return count_; }
  std::unique_ptr<ElementIterator> MakeIterator(const IterateOptions& options) const override {
    class It : public ElementIterator {
     public:
      It(const BatchNode* node, std::unique_ptr<ElementIterator> in)
          : node_(node), in_(std::move(in)) {}
      absl::StatusOr<bool> Next(Element* out) override {
        rows_.clear();
        while (static_cast<int64_t>(rows_.size()) < node_->count_) {
          if (rows_.size() == pool_.size()) pool_.emplace_back();
          absl::StatusOr<bool> more = in_->Next(&pool_[rows_.size()]);
          if (!more.ok()) return more;
          if (!*more) break;
          rows_.push_back(rows_.size());
        }
        if (rows_.empty()) return false;
        if (node_->drop_remainder_ && static_cast<int64_t>(rows_.size()) < node_->count_) {
          return false;
        }
        return node_->Collate(pool_, static_cast<int64_t>(rows_.size()), out);
      }

     private:
      const BatchNode* node_;
      std::unique_ptr<ElementIterator> in_;
      std::vector<Element> pool_;  // Reused: their storage stays.
      std::vector<size_t> rows_;
    };
    return std::make_unique<It>(this, input_->MakeIterator(options));
  }

  absl::StatusOr<bool> Collate(const std::vector<Element>& rows, int64_t n, Element* out) const {
    absl::Status stacked = StackElements(input_->spec(), rows, n, padded_, padding_, out);
    if (!stacked.ok()) return stacked;
    return true;
  }
  Kind kind() const override { return Kind::kBatch; }
  std::shared_ptr<const PipelineNode> WithInput(
      std::shared_ptr<const PipelineNode> input) const override {
    return std::make_shared<BatchNode>(std::move(input), count_, drop_remainder_, padded_,
                                       padding_);
  }
  BatchSettings settings() const { return {count_, drop_remainder_, padded_, padding_}; }

 private:
  std::shared_ptr<const PipelineNode> input_;
  const int64_t count_;
  const bool drop_remainder_, padded_;
  const std::vector<double> padding_;
  ElementSpec spec_;
};

}  // namespace

absl::Status StackElements(const ElementSpec& spec, const std::vector<Element>& rows, int64_t n,
                           bool padded, const std::vector<double>& padding, Element* out) {
  const size_t features = spec.size();
  out->values.resize(features);
  if (n == 0) {
    // No rows: each feature [0, ...], its variable dimensions 0.
    for (size_t f = 0; f < features; ++f) {
      Shape shape = spec[f].shape;
      for (int64_t& d : shape) d = std::max<int64_t>(d, 0);
      shape.insert(shape.begin(), 0);
      out->values[f].Reset(spec[f].type, shape);
    }
    out->file = nullptr;
    out->record = -1;
    return absl::OkStatus();
  }
  out->file = rows[0].file;
  out->record = rows[0].record;
  out->record_is_line = rows[0].record_is_line;
  out->index = rows[0].index;
  out->step = rows[0].step;
  for (size_t f = 0; f < features; ++f) {
    const TypedTensor& first = rows[0].values[f];
    Shape shape = first.shape();
    for (int64_t r = 1; r < n; ++r) {
      const TypedTensor& v = rows[static_cast<size_t>(r)].values[f];
      if (v.type() != first.type() || v.shape().size() != shape.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat(OriginOf(rows[static_cast<size_t>(r)]), "batching feature \"",
                         spec[f].name, "\": ", ValueTypeName(v.type()), " ", ShapeString(v.shape()),
                         " against ", ValueTypeName(first.type()), " ", ShapeString(first.shape()),
                         " in the batch's first element"));
      }
      for (size_t d = 0; d < shape.size(); ++d) {
        if (v.shape()[d] == shape[d]) continue;
        if (!padded) {
          return absl::InvalidArgumentError(absl::StrCat(
              OriginOf(rows[static_cast<size_t>(r)]), "batching feature \"", spec[f].name,
              "\": shape ", ShapeString(v.shape()), " against ", ShapeString(first.shape()),
              " in the batch's first element (PaddedBatch pads variable lengths)"));
        }
        shape[d] = std::max(shape[d], v.shape()[d]);
      }
    }
    const int64_t per = NumElements(shape);
    Shape batched = shape;
    batched.insert(batched.begin(), n);
    TypedTensor& dst = out->values[f];
    dst.Reset(first.type(), batched);
    const double pad = f < padding.size() ? padding[f] : 0.0;
    for (int64_t r = 0; r < n; ++r) {
      const TypedTensor& v = rows[static_cast<size_t>(r)].values[f];
      if (v.shape() == shape) {
        if (v.type() == ValueType::kString) {
          std::copy(v.strings().begin(), v.strings().end(), dst.strings().begin() + r * per);
        } else if (per > 0) {
          std::memcpy(static_cast<char*>(dst.raw()) + r * v.bytes(), v.raw(),
                      static_cast<size_t>(v.bytes()));
        }
        continue;
      }
      // Padded: each value at its index in the larger shape, the rest padding.
      for (int64_t k = 0; k < per; ++k) {
        if (v.type() == ValueType::kString) {
          dst.strings()[static_cast<size_t>(r * per + k)].clear();
        } else {
          StorePadding(&dst, r * per + k, pad);
        }
      }
      for (int64_t k = 0; k < v.size(); ++k) {
        // Value k's index in v's shape, placed in the padded shape (row-major).
        int64_t rest = k, flat = 0, stride = 1;
        for (size_t d = shape.size(); d-- > 0;) {
          const int64_t dim = v.shape()[d];
          flat += (rest % dim) * stride;
          rest /= dim;
          stride *= shape[d];
        }
        const int64_t to = r * per + flat;
        if (v.type() == ValueType::kString) {
          dst.strings()[static_cast<size_t>(to)] = v.strings()[static_cast<size_t>(k)];
        } else {
          const size_t size = ValueTypeSize(v.type());
          std::memcpy(static_cast<char*>(dst.raw()) + to * size,
                      static_cast<const char*>(v.raw()) + k * size, size);
        }
      }
    }
  }
  return absl::OkStatus();
}

bool BatchSettingsOf(const PipelineNode& node, BatchSettings* out) {
  const auto* batch = dynamic_cast<const BatchNode*>(&node);
  if (batch == nullptr) return false;
  *out = batch->settings();
  return true;
}

Pipeline Pipeline::Batch(int64_t count, bool drop_remainder) const {
  return Pipeline(
      std::make_shared<BatchNode>(node_, count, drop_remainder, false, std::vector<double>()));
}

Pipeline Pipeline::PaddedBatch(int64_t count, std::vector<double> padding,
                               bool drop_remainder) const {
  return Pipeline(
      std::make_shared<BatchNode>(node_, count, drop_remainder, true, std::move(padding)));
}

}  // namespace ringwork
