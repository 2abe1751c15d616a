// The element-by-element transformations: Filter, Shuffle, Take, Skip, Repeat,
// Shard. (Map and Prefetch, which run threads, are in threaded_nodes.cc; Batch in
// batch.cc; Cache in cache.cc.)
#include <random>

#include "absl/strings/str_cat.h"
#include "base/fnv1a.h"
#include "data/pipeline/pipeline.h"

namespace ringwork {
namespace {

// A node over one input, with the same spec.
class UnaryNode : public PipelineNode {
 public:
  explicit UnaryNode(std::shared_ptr<const PipelineNode> input) : input_(std::move(input)) {}
  const ElementSpec& spec() const override { return input_->spec(); }
  std::shared_ptr<const PipelineNode> input() const override { return input_; }
  int64_t file_count() const override { return input_->file_count(); }

 protected:
  std::shared_ptr<const PipelineNode> input_;
};

class FilterNode : public UnaryNode {
 public:
  FilterNode(std::shared_ptr<const PipelineNode> input, PredicateFn keep)
      : UnaryNode(std::move(input)), keep_(std::move(keep)) {}
  std::string name() const override { return "filter"; }
  std::shared_ptr<const PipelineNode> WithInput(
      std::shared_ptr<const PipelineNode> input) const override {
    return std::make_shared<FilterNode>(std::move(input), keep_);
  }
  std::unique_ptr<ElementIterator> MakeIterator(const IterateOptions& options) const override {
    class It : public ElementIterator {
     public:
      It(std::unique_ptr<ElementIterator> in, const PredicateFn* keep)
          : in_(std::move(in)), keep_(keep) {}
      absl::StatusOr<bool> Next(Element* out) override {
        while (true) {
          absl::StatusOr<bool> more = in_->Next(out);
          if (!more.ok() || !*more) return more;
          absl::StatusOr<bool> kept = (*keep_)(*out);
          if (!kept.ok()) {
            return absl::Status(kept.status().code(),
                                absl::StrCat(OriginOf(*out), "filter: ", kept.status().message()));
          }
          if (*kept) return true;
        }
      }

     private:
      std::unique_ptr<ElementIterator> in_;
      const PredicateFn* keep_;  // Not owned: the node's.
    };
    return std::make_unique<It>(input_->MakeIterator(options), &keep_);
  }

 private:
  PredicateFn keep_;
};

class ShuffleNode : public UnaryNode {
 public:
  ShuffleNode(std::shared_ptr<const PipelineNode> input, int64_t buffer_size, uint64_t seed)
      : UnaryNode(std::move(input)), buffer_size_(std::max<int64_t>(buffer_size, 1)), seed_(seed) {}
  std::string name() const override { return "shuffle"; }
  Kind kind() const override { return Kind::kPosition; }
  std::shared_ptr<const PipelineNode> WithInput(
      std::shared_ptr<const PipelineNode> input) const override {
    return std::make_shared<ShuffleNode>(std::move(input), buffer_size_, seed_);
  }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<ElementIterator> MakeIterator(const IterateOptions& options) const override {
    class It : public ElementIterator {
     public:
      It(std::unique_ptr<ElementIterator> in, int64_t size, uint64_t seed)
          : in_(std::move(in)), size_(size), rng_(seed) {}
      absl::StatusOr<bool> Next(Element* out) override {
        while (!input_ended_ && filled_ < size_) {
          if (filled_ == static_cast<int64_t>(buffer_.size())) buffer_.emplace_back();
          absl::StatusOr<bool> more = in_->Next(&buffer_[static_cast<size_t>(filled_)]);
          if (!more.ok()) return more;
          if (!*more) {
            input_ended_ = true;
            break;
          }
          ++filled_;
        }
        if (filled_ == 0) return false;
        // A uniform slot. The caller's element takes its place and the next input
        // is read into it (its buffers reused): once the input has ended, the
        // last filled slot moves there instead.
        const size_t slot = static_cast<size_t>(rng_() % static_cast<uint64_t>(filled_));
        std::swap(*out, buffer_[slot]);
        if (!input_ended_) {
          absl::StatusOr<bool> more = in_->Next(&buffer_[slot]);
          if (!more.ok()) return more;
          if (*more) return true;
          input_ended_ = true;
        }
        --filled_;
        if (slot != static_cast<size_t>(filled_)) {
          std::swap(buffer_[slot], buffer_[static_cast<size_t>(filled_)]);
        }
        return true;
      }

     private:
      std::unique_ptr<ElementIterator> in_;
      const int64_t size_;
      std::mt19937_64 rng_;          // Specified exactly by the standard: the same on every worker.
      std::vector<Element> buffer_;  // Slots [0, filled_) hold elements.
      int64_t filled_ = 0;
      bool input_ended_ = false;
    };
    const uint64_t pass = static_cast<uint64_t>(options.pass);
    return std::make_unique<It>(input_->MakeIterator(options), buffer_size_,
                                Fnv1a64(&pass, sizeof(pass), seed_ ^ kFnv1aOffset));
  }

 private:
  const int64_t buffer_size_;
  const uint64_t seed_;
};

class TakeSkipNode : public UnaryNode {
 public:
  TakeSkipNode(std::shared_ptr<const PipelineNode> input, int64_t count, bool take)
      : UnaryNode(std::move(input)), count_(count), take_(take) {}
  std::string name() const override { return take_ ? "take" : "skip"; }
  Kind kind() const override { return Kind::kPosition; }
  std::shared_ptr<const PipelineNode> WithInput(
      std::shared_ptr<const PipelineNode> input) const override {
    return std::make_shared<TakeSkipNode>(std::move(input), count_, take_);
  }
  int64_t cardinality() const override {
    const int64_t in = input_->cardinality();
    if (in < 0) return -1;
    if (take_) return count_ < 0 ? in : std::min(in, count_);
    return std::max<int64_t>(in - count_, 0);
  }
  std::unique_ptr<ElementIterator> MakeIterator(const IterateOptions& options) const override {
    class It : public ElementIterator {
     public:
      It(std::unique_ptr<ElementIterator> in, int64_t count, bool take)
          : in_(std::move(in)), count_(count), take_(take) {}
      absl::StatusOr<bool> Next(Element* out) override {
        if (take_) {
          if (count_ >= 0 && seen_ >= count_) return false;
          ++seen_;
          return in_->Next(out);
        }
        while (seen_ < count_) {
          absl::StatusOr<bool> more = in_->Next(out);
          if (!more.ok() || !*more) return more;
          ++seen_;
        }
        return in_->Next(out);
      }

     private:
      std::unique_ptr<ElementIterator> in_;
      const int64_t count_;
      const bool take_;
      int64_t seen_ = 0;
    };
    return std::make_unique<It>(input_->MakeIterator(options), count_, take_);
  }

 private:
  const int64_t count_;
  const bool take_;
};

class RepeatNode : public UnaryNode {
 public:
  RepeatNode(std::shared_ptr<const PipelineNode> input, int64_t count)
      : UnaryNode(std::move(input)), count_(count) {}
  std::string name() const override { return "repeat"; }
  Kind kind() const override { return Kind::kPosition; }
  std::shared_ptr<const PipelineNode> WithInput(
      std::shared_ptr<const PipelineNode> input) const override {
    return std::make_shared<RepeatNode>(std::move(input), count_);
  }
  int64_t cardinality() const override {
    const int64_t in = input_->cardinality();
    return count_ < 0 || in < 0 ? -1 : in * count_;
  }
  std::unique_ptr<ElementIterator> MakeIterator(const IterateOptions& options) const override {
    class It : public ElementIterator {
     public:
      It(const PipelineNode* input, IterateOptions options, int64_t count)
          : input_(input), options_(options), count_(count), first_pass_(options.pass) {}
      absl::StatusOr<bool> Next(Element* out) override {
        while (count_ < 0 || done_ < count_) {
          if (in_ == nullptr) {
            IterateOptions o = options_;
            o.pass = count_ < 0 ? first_pass_ + done_ : first_pass_ * count_ + done_;
            pass_ = o.pass;
            in_ = input_->MakeIterator(o);
            produced_ = false;
          }
          absl::StatusOr<bool> more = in_->Next(out);
          if (!more.ok()) return more;
          if (*more) {
            produced_ = true;
            out->pass = pass_;  // For random Maps moved above this Repeat (DATA).
            return true;
          }
          in_.reset();
          ++done_;
          // An empty input repeated forever would loop without end.
          if (!produced_ && count_ < 0) return false;
        }
        return false;
      }

     private:
      const PipelineNode* input_;
      const IterateOptions options_;
      const int64_t count_;
      const int64_t first_pass_;
      int64_t done_ = 0, pass_ = 0;
      bool produced_ = false;
      std::unique_ptr<ElementIterator> in_;
    };
    return std::make_unique<It>(input_.get(), options, count_);
  }

 private:
  const int64_t count_;
};

class ShardNode : public UnaryNode {
 public:
  ShardNode(std::shared_ptr<const PipelineNode> input, int64_t num_shards, int64_t index)
      : UnaryNode(std::move(input)), num_shards_(std::max<int64_t>(num_shards, 1)), index_(index) {}
  std::string name() const override { return "shard"; }
  Kind kind() const override { return Kind::kPosition; }
  std::shared_ptr<const PipelineNode> WithInput(
      std::shared_ptr<const PipelineNode> input) const override {
    return std::make_shared<ShardNode>(std::move(input), num_shards_, index_);
  }
  int64_t cardinality() const override {
    const int64_t in = input_->cardinality();
    return in < 0 ? -1 : (in - index_ + num_shards_ - 1) / num_shards_;
  }
  std::unique_ptr<ElementIterator> MakeIterator(const IterateOptions& options) const override {
    class It : public ElementIterator {
     public:
      It(std::unique_ptr<ElementIterator> in, int64_t n, int64_t index)
          : in_(std::move(in)), n_(n), index_(index) {}
      absl::StatusOr<bool> Next(Element* out) override {
        while (true) {
          absl::StatusOr<bool> more = in_->Next(out);
          if (!more.ok() || !*more) return more;
          if (seen_++ % n_ == index_) return true;
        }
      }

     private:
      std::unique_ptr<ElementIterator> in_;
      const int64_t n_, index_;
      int64_t seen_ = 0;
    };
    return std::make_unique<It>(input_->MakeIterator(options), num_shards_, index_);
  }

 private:
  const int64_t num_shards_, index_;
};

}  // namespace

Pipeline Pipeline::Filter(PredicateFn keep) const {
  return Pipeline(std::make_shared<FilterNode>(node_, std::move(keep)));
}

Pipeline Pipeline::Shuffle(int64_t buffer_size, uint64_t seed) const {
  return Pipeline(std::make_shared<ShuffleNode>(node_, buffer_size, seed));
}

Pipeline Pipeline::Take(int64_t count) const {
  return Pipeline(std::make_shared<TakeSkipNode>(node_, count, /*take=*/true));
}

Pipeline Pipeline::Skip(int64_t count) const {
  return Pipeline(std::make_shared<TakeSkipNode>(node_, count, /*take=*/false));
}

Pipeline Pipeline::Repeat(int64_t count) const {
  return Pipeline(std::make_shared<RepeatNode>(node_, count));
}

Pipeline Pipeline::Shard(int64_t num_shards, int64_t index) const {
  return Pipeline(std::make_shared<ShardNode>(node_, num_shards, index));
}

}  // namespace ringwork
