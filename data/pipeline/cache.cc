// Cache: the first complete pass kept in memory or in a file, later passes read
// from there; and Pipeline::Iterate, which keeps the graph alive.
#include <cstdio>
#include <fstream>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "data/pipeline/pipeline.h"

namespace ringwork {
namespace {

// One element in a cache file: its value count; per value its type, rank, dims,
// then its bytes (strings: each length and bytes).
void WriteElement(const Element& e, std::ofstream* out) {
  auto put = [&](const void* p, size_t n) { out->write(static_cast<const char*>(p), n); };
  const uint32_t count = static_cast<uint32_t>(e.values.size());
  put(&count, 4);
  for (const TypedTensor& v : e.values) {
    const uint8_t type = static_cast<uint8_t>(v.type()),
                  rank = static_cast<uint8_t>(v.shape().size());
    put(&type, 1);
    put(&rank, 1);
    put(v.shape().data(), 8 * v.shape().size());
    if (v.type() == ValueType::kString) {
      for (const std::string& s : v.strings()) {
        const uint64_t n = s.size();
        put(&n, 8);
        put(s.data(), s.size());
      }
    } else {
      put(v.raw(), static_cast<size_t>(v.bytes()));
    }
  }
}

bool ReadElement(std::ifstream* in, Element* e) {
  auto get = [&](void* p, size_t n) {
    return static_cast<bool>(in->read(static_cast<char*>(p), n));
  };
  uint32_t count = 0;
  if (!get(&count, 4)) return false;
  e->values.resize(count);
  for (TypedTensor& v : e->values) {
    uint8_t type = 0, rank = 0;
    if (!get(&type, 1) || !get(&rank, 1)) return false;
    Shape shape(rank);
    if (rank > 0 && !get(shape.data(), 8 * rank)) return false;
    v.Reset(static_cast<ValueType>(type), shape);
    if (v.type() == ValueType::kString) {
      for (std::string& s : v.strings()) {
        uint64_t n = 0;
        if (!get(&n, 8)) return false;
        s.resize(n);
        if (n > 0 && !get(s.data(), n)) return false;
      }
    } else if (v.bytes() > 0 && !get(v.raw(), static_cast<size_t>(v.bytes()))) {
      return false;
    }
  }
  return true;
}

class CacheNode : public PipelineNode {
 public:
  CacheNode(std::shared_ptr<const PipelineNode> input, std::string path)
      : input_(std::move(input)), path_(std::move(path)), state_(std::make_shared<State>()) {}
  const ElementSpec& spec() const override { return input_->spec(); }
  std::shared_ptr<const PipelineNode> input() const override { return input_; }
  int64_t file_count() const override { return input_->file_count(); }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string name() const override { return "cache"; }
  std::shared_ptr<const PipelineNode> WithInput(
      std::shared_ptr<const PipelineNode> input) const override {
    return std::make_shared<CacheNode>(std::move(input), path_);
  }

  std::unique_ptr<ElementIterator> MakeIterator(const IterateOptions& options) const override {
    std::lock_guard<std::mutex> lock(state_->mu);
    // A cache file an earlier run completed is used as it is (as tf.data does).
    if (!state_->complete && !path_.empty() && std::ifstream(path_).good()) state_->complete = true;
    if (state_->complete) {
      if (path_.empty()) return std::make_unique<Replay>(state_);
      return std::make_unique<FileReplay>(path_);
    }
    const bool fill = !state_->filling;
    if (fill) state_->filling = true;
    return std::make_unique<Fill>(input_->MakeIterator(options), fill ? state_ : nullptr, path_);
  }

 private:
  struct State {
    std::mutex mu;
    bool complete = false, filling = false;
    std::vector<Element> elements;  // In memory (path "").
  };

  // Reads the input, keeping what it reads when it is the one filling.
  class Fill : public ElementIterator {
   public:
    Fill(std::unique_ptr<ElementIterator> in, std::shared_ptr<State> state, std::string path)
        : in_(std::move(in)), state_(std::move(state)), path_(std::move(path)) {
      if (state_ != nullptr && !path_.empty()) {
        file_.open(path_ + ".partial", std::ios::binary | std::ios::trunc);
      }
    }
    ~Fill() override {
      if (state_ == nullptr) return;
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->filling = false;
      if (!state_->complete) {
        state_->elements.clear();
        if (!path_.empty()) std::remove((path_ + ".partial").c_str());
      }
    }
    absl::StatusOr<bool> Next(Element* out) override {
      absl::StatusOr<bool> more = in_->Next(out);
      if (!more.ok() || state_ == nullptr) return more;
      if (*more) {
        if (path_.empty()) {
          kept_.push_back(*out);
        } else {
          WriteElement(*out, &file_);
          if (!file_) {
            return absl::InternalError(absl::StrCat("cannot write the cache file ", path_));
          }
        }
        return true;
      }
      // A whole pass: the cache is complete.
      if (!path_.empty()) {
        file_.close();
        if (!file_ || std::rename((path_ + ".partial").c_str(), path_.c_str()) != 0) {
          return absl::InternalError(absl::StrCat("cannot write the cache file ", path_));
        }
      }
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->elements = std::move(kept_);
      state_->complete = true;
      return false;
    }

   private:
    std::unique_ptr<ElementIterator> in_;
    std::shared_ptr<State> state_;  // Null: another iterator fills.
    std::string path_;
    std::ofstream file_;
    std::vector<Element> kept_;
  };

  class Replay : public ElementIterator {
   public:
    explicit Replay(std::shared_ptr<State> state) : state_(std::move(state)) {}
    absl::StatusOr<bool> Next(Element* out) override {
      if (next_ >= state_->elements.size()) return false;
      *out = state_->elements[next_++];
      return true;
    }

   private:
    std::shared_ptr<State> state_;  // Complete: read only.
    size_t next_ = 0;
  };

  class FileReplay : public ElementIterator {
   public:
    explicit FileReplay(const std::string& path) : path_(path), in_(path, std::ios::binary) {}
    absl::StatusOr<bool> Next(Element* out) override {
      if (!in_) return absl::DataLossError(absl::StrCat("cannot read the cache file ", path_));
      if (in_.peek() == std::ifstream::traits_type::eof()) return false;
      if (!ReadElement(&in_, out)) {
        return absl::DataLossError(absl::StrCat("the cache file ", path_, " is cut"));
      }
      out->file = nullptr;
      out->index = index_++;
      return true;
    }

   private:
    std::string path_;
    std::ifstream in_;
    int64_t index_ = 0;
  };

  std::shared_ptr<const PipelineNode> input_;
  const std::string path_;
  std::shared_ptr<State> state_;
};

// An iterator that keeps its pipeline's graph alive.
class Owning : public ElementIterator {
 public:
  Owning(std::shared_ptr<const PipelineNode> node, std::unique_ptr<ElementIterator> it)
      : node_(std::move(node)), it_(std::move(it)) {}
  absl::StatusOr<bool> Next(Element* out) override { return it_->Next(out); }

 private:
  std::shared_ptr<const PipelineNode> node_;
  std::unique_ptr<ElementIterator> it_;  // Destroyed first: it uses the nodes.
};

}  // namespace

Pipeline Pipeline::Cache(const std::string& path) const {
  return Pipeline(std::make_shared<CacheNode>(node_, path));
}

std::unique_ptr<ElementIterator> Pipeline::Iterate(const IterateOptions& options) const {
  return std::make_unique<Owning>(node_, node_->MakeIterator(options));
}

}  // namespace ringwork
