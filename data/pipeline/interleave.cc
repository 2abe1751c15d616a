// Interleave: each input element opens a pipeline of its own (a file's records);
// cycle_length of them are read at once, block_length elements from each in turn.
#include <optional>

#include "absl/strings/str_cat.h"
#include "data/pipeline/pipeline.h"

namespace ringwork {
namespace {

class InterleaveNode : public PipelineNode {
 public:
  InterleaveNode(std::shared_ptr<const PipelineNode> input, InterleaveFn fn, ElementSpec spec,
                 int64_t cycle, int64_t block)
      : input_(std::move(input)),
        fn_(std::move(fn)),
        spec_(std::move(spec)),
        cycle_(std::max<int64_t>(cycle, 1)),
        block_(std::max<int64_t>(block, 1)) {}
  const ElementSpec& spec() const override { return spec_; }
  std::shared_ptr<const PipelineNode> input() const override { return input_; }
  int64_t file_count() const override { return input_->file_count(); }
  std::string name() const override { return "interleave"; }
  std::shared_ptr<const PipelineNode> WithInput(
      std::shared_ptr<const PipelineNode> input) const override {
    return std::make_shared<InterleaveNode>(std::move(input), fn_, spec_, cycle_, block_);
  }
  std::unique_ptr<ElementIterator> MakeIterator(const IterateOptions& options) const override {
    class It : public ElementIterator {
     public:
      It(const InterleaveNode* node, const IterateOptions& options)
          : node_(node), options_(options), in_(node->input_->MakeIterator(options)) {
        // The inner pipelines read whole what the input (already sharded) names.
        inner_options_ = options;
        inner_options_.num_shards = 1;
        inner_options_.shard_index = 0;
        cycle_.resize(static_cast<size_t>(node->cycle_));
        keep_.resize(cycle_.size());
      }
      absl::StatusOr<bool> Next(Element* out) override {
        while (true) {
          // Open pipelines in empty slots while the input lasts.
          for (auto& slot : cycle_) {
            if (slot != nullptr || input_ended_) continue;
            Element e;
            absl::StatusOr<bool> more = in_->Next(&e);
            if (!more.ok()) return more;
            if (!*more) {
              input_ended_ = true;
              break;
            }
            absl::StatusOr<Pipeline> inner = node_->fn_(e);
            if (!inner.ok()) {
              return absl::Status(inner.status().code(),
                                  absl::StrCat(OriginOf(e), inner.status().message()));
            }
            // The inner pipeline's nodes live as long as its iterator.
            const size_t k = static_cast<size_t>(&slot - cycle_.data());
            keep_[k].emplace(std::move(*inner));
            slot = keep_[k]->Iterate(inner_options_);
          }
          bool any = false;
          for (size_t k = 0; k < cycle_.size(); ++k) {
            auto& slot = cycle_[current_];
            if (slot == nullptr) {
              current_ = (current_ + 1) % cycle_.size();
              taken_ = 0;
              continue;
            }
            any = true;
            absl::StatusOr<bool> more = slot->Next(out);
            if (!more.ok()) return more;
            if (!*more) {
              slot.reset();
              current_ = (current_ + 1) % cycle_.size();
              taken_ = 0;
              break;  // Refill the slot before going on.
            }
            out->index = index_++;
            if (++taken_ >= node_->block_) {
              current_ = (current_ + 1) % cycle_.size();
              taken_ = 0;
            }
            return true;
          }
          if (!any && input_ended_) return false;
        }
      }

     private:
      const InterleaveNode* node_;
      IterateOptions options_, inner_options_;
      std::unique_ptr<ElementIterator> in_;
      // Each slot's pipeline, then its iterator (destroyed first: it uses the nodes).
      std::vector<std::optional<Pipeline>> keep_;
      std::vector<std::unique_ptr<ElementIterator>> cycle_;
      size_t current_ = 0;
      int64_t taken_ = 0;
      int64_t index_ = 0;
      bool input_ended_ = false;
    };
    return std::make_unique<It>(this, options);
  }

 private:
  std::shared_ptr<const PipelineNode> input_;
  InterleaveFn fn_;
  ElementSpec spec_;
  const int64_t cycle_, block_;
};

}  // namespace

Pipeline Interleave(const Pipeline& input, InterleaveFn fn, ElementSpec out_spec,
                    int64_t cycle_length, int64_t block_length) {
  return Pipeline(std::make_shared<InterleaveNode>(
      input.shared_node(), std::move(fn), std::move(out_spec), cycle_length, block_length));
}

}  // namespace ringwork
