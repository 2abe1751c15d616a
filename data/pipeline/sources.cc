// Sources from memory and code: a generator, tensor slices, the files of a glob.
#include <glob.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "data/pipeline/pipeline.h"

namespace ringwork {
namespace {

class GeneratorNode : public PipelineNode {
 public:
  GeneratorNode(ElementSpec spec, std::function<Generator(int64_t)> make, int64_t cardinality)
      : spec_(std::move(spec)), make_(std::move(make)), cardinality_(cardinality) {}
  const ElementSpec& spec() const override { return spec_; }
  std::string name() const override { return "generator"; }
  Kind kind() const override { return Kind::kSource; }
  int64_t cardinality() const override { return cardinality_; }
  std::unique_ptr<ElementIterator> MakeIterator(const IterateOptions& options) const override {
    class It : public ElementIterator {
     public:
      explicit It(Generator next) : next_(std::move(next)) {}
      absl::StatusOr<bool> Next(Element* out) override {
        out->file = nullptr;
        out->record = -1;
        absl::StatusOr<bool> more = next_(out);
        if (more.ok() && *more) out->index = index_++;
        return more;
      }

     private:
      Generator next_;
      int64_t index_ = 0;
    };
    return std::make_unique<It>(make_(options.pass));
  }

 private:
  ElementSpec spec_;
  std::function<Generator(int64_t)> make_;
  const int64_t cardinality_;
};

class TensorSlicesNode : public PipelineNode {
 public:
  TensorSlicesNode(ElementSpec spec, std::vector<TypedTensor> columns, int64_t count)
      : spec_(std::move(spec)), columns_(std::move(columns)), count_(count) {}
  const ElementSpec& spec() const override { return spec_; }
  std::string name() const override { return "tensor_slices"; }
  Kind kind() const override { return Kind::kSource; }
  int64_t cardinality() const override { return count_; }
  std::unique_ptr<ElementIterator> MakeIterator(const IterateOptions&) const override {
    class It : public ElementIterator {
     public:
      explicit It(const TensorSlicesNode* node) : node_(node) {}
      absl::StatusOr<bool> Next(Element* out) override {
        if (row_ >= node_->count_) return false;
        out->values.resize(node_->columns_.size());
        for (size_t c = 0; c < node_->columns_.size(); ++c) {
          const TypedTensor& column = node_->columns_[c];
          TypedTensor& v = out->values[c];
          v.Reset(column.type(), node_->spec_[c].shape);
          const int64_t per = v.size();
          if (column.type() == ValueType::kString) {
            std::copy(column.strings().begin() + row_ * per,
                      column.strings().begin() + (row_ + 1) * per, v.strings().begin());
          } else if (v.bytes() > 0) {
            std::memcpy(v.raw(), static_cast<const char*>(column.raw()) + row_ * v.bytes(),
                        static_cast<size_t>(v.bytes()));
          }
        }
        out->file = nullptr;
        out->record = -1;
        out->index = row_++;
        return true;
      }

     private:
      const TensorSlicesNode* node_;
      int64_t row_ = 0;
    };
    return std::make_unique<It>(this);
  }

 private:
  ElementSpec spec_;
  std::vector<TypedTensor> columns_;
  const int64_t count_;
};

class ListFilesNode : public PipelineNode {
 public:
  explicit ListFilesNode(std::vector<std::string> files)
      : files_(std::move(files)), spec_({{"path", ValueType::kString, {}}}) {}
  const ElementSpec& spec() const override { return spec_; }
  std::string name() const override { return "list_files"; }
  Kind kind() const override { return Kind::kSource; }
  int64_t file_count() const override { return static_cast<int64_t>(files_.size()); }
  int64_t cardinality() const override { return static_cast<int64_t>(files_.size()); }
  std::unique_ptr<ElementIterator> MakeIterator(const IterateOptions& options) const override {
    class It : public ElementIterator {
     public:
      It(const std::vector<std::string>* files, int shards, int index)
          : files_(files), shards_(std::max(shards, 1)), next_(index) {}
      absl::StatusOr<bool> Next(Element* out) override {
        if (next_ >= static_cast<int64_t>(files_->size())) return false;
        const std::string& path = (*files_)[static_cast<size_t>(next_)];
        out->values.resize(1);
        out->values[0] = TypedTensor::Strings({path});
        out->values[0].Reshape({});
        out->file = &path;
        out->record = -1;
        out->index = index_++;
        next_ += shards_;
        return true;
      }

     private:
      const std::vector<std::string>* files_;
      const int shards_;
      int64_t next_;
      int64_t index_ = 0;
    };
    return std::make_unique<It>(&files_, options.num_shards, options.shard_index);
  }

 private:
  const std::vector<std::string> files_;
  ElementSpec spec_;
};

}  // namespace

Pipeline GeneratorPipeline(ElementSpec spec, std::function<Generator(int64_t pass)> make,
                           int64_t cardinality) {
  return Pipeline(std::make_shared<GeneratorNode>(std::move(spec), std::move(make), cardinality));
}

absl::StatusOr<Pipeline> TensorSlicesPipeline(
    std::vector<std::pair<std::string, TypedTensor>> columns) {
  if (columns.empty()) return absl::InvalidArgumentError("tensor slices of no tensors");
  ElementSpec spec;
  std::vector<TypedTensor> values;
  int64_t count = -1;
  for (auto& [name, column] : columns) {
    if (column.shape().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor slices: \"", name, "\" is a scalar (it needs a first dimension)"));
    }
    if (count >= 0 && column.shape()[0] != count) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor slices: \"", name, "\" has ", column.shape()[0], " rows, the others ", count));
    }
    count = column.shape()[0];
    spec.push_back({name, column.type(), Shape(column.shape().begin() + 1, column.shape().end())});
    values.push_back(std::move(column));
  }
  return Pipeline(std::make_shared<TensorSlicesNode>(std::move(spec), std::move(values), count));
}

absl::StatusOr<std::vector<std::string>> ExpandGlob(const std::string& pattern) {
  glob_t found{};
  const int result = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &found);
  std::vector<std::string> files;
  if (result == 0) {
    for (size_t i = 0; i < found.gl_pathc; ++i) files.emplace_back(found.gl_pathv[i]);
  }
  globfree(&found);
  if (files.empty()) {
    return absl::NotFoundError(absl::StrCat("no file matches \"", pattern, "\""));
  }
  std::sort(files.begin(), files.end());
  return files;
}

absl::StatusOr<Pipeline> ListFilesPipeline(const std::string& pattern) {
  absl::StatusOr<std::vector<std::string>> files = ExpandGlob(pattern);
  if (!files.ok()) return files.status();
  return Pipeline(std::make_shared<ListFilesNode>(std::move(*files)));
}

}  // namespace ringwork
