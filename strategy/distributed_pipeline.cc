#include "strategy/distributed_pipeline.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/exit_code.h"
#include "base/status_macros.h"
#include "strategy/multi_worker_mirrored_strategy.h"

namespace ringwork {
namespace {

// DATA: every worker reads the common order here and keeps its block of each
// global batch (positions [begin, begin + share) of each run of `global`),
// tagging each element with its step; the first `skip_steps` steps are dropped.
class BlockShardNode : public PipelineNode {
 public:
  BlockShardNode(std::shared_ptr<const PipelineNode> input, int64_t global, int replicas, int rank,
                 int64_t skip_steps)
      : input_(std::move(input)),
        global_(global),
        share_(ReplicaShare(global, replicas, rank)),
        skip_steps_(skip_steps) {
    for (int r = 0; r < rank; ++r) begin_ += ReplicaShare(global, replicas, r);
  }
  const ElementSpec& spec() const override { return input_->spec(); }
  std::shared_ptr<const PipelineNode> input() const override { return input_; }
  int64_t file_count() const override { return input_->file_count(); }
  std::string name() const override { return "shard by block"; }
  std::unique_ptr<ElementIterator> MakeIterator(const IterateOptions& options) const override {
    class It : public ElementIterator {
     public:
      It(const BlockShardNode* node, std::unique_ptr<ElementIterator> in)
          : node_(node), in_(std::move(in)) {}
      absl::StatusOr<bool> Next(Element* out) override {
        while (true) {
          const int64_t step = position_ / node_->global_, offset = position_ % node_->global_;
          // Skipped steps' elements, and the other replicas', are read and dropped
          // here, before any Map.
          absl::StatusOr<bool> more = in_->Next(out);
          if (!more.ok() || !*more) return more;
          ++position_;
          if (step < node_->skip_steps_) continue;
          if (offset < node_->begin_ || offset >= node_->begin_ + node_->share_) continue;
          out->step = step;
          return true;
        }
      }

     private:
      const BlockShardNode* node_;
      std::unique_ptr<ElementIterator> in_;
      int64_t position_ = 0;
    };
    return std::make_unique<It>(this, input_->MakeIterator(options));
  }

 private:
  std::shared_ptr<const PipelineNode> input_;
  const int64_t global_;
  int64_t begin_ = 0;
  const int64_t share_, skip_steps_;
};

// The pipeline's nodes from its source up (the source first).
std::vector<std::shared_ptr<const PipelineNode>> Chain(std::shared_ptr<const PipelineNode> top) {
  std::vector<std::shared_ptr<const PipelineNode>> chain;
  for (; top != nullptr; top = top->input()) chain.push_back(top);
  std::reverse(chain.begin(), chain.end());
  return chain;
}

bool IsPrefetch(const PipelineNode& node) { return node.name() == "prefetch"; }

}  // namespace

int64_t ReplicaShare(int64_t global, int replicas, int r) {
  return global / replicas + (r < global % replicas ? 1 : 0);
}

absl::StatusOr<std::unique_ptr<DistributedPipeline>> DistributedPipeline::Create(
    MultiWorkerMirroredStrategy* strategy, const Pipeline& pipeline,
    const DistributedPipelineOptions& options) {
  std::unique_ptr<DistributedPipeline> d(new DistributedPipeline());
  d->strategy_ = strategy;
  d->options_ = options;
  d->replicas_ = strategy->num_replicas_in_sync();
  d->rank_ = strategy->rank();
  // The pipeline's own batching and prefetching at its end give way to the
  // per-replica batches made here.
  std::vector<std::shared_ptr<const PipelineNode>> chain = Chain(pipeline.shared_node());
  while (chain.size() > 1 && IsPrefetch(*chain.back())) chain.pop_back();
  int64_t own_batch = 0;
  if (chain.size() > 1 && BatchSettingsOf(*chain.back(), &d->batching_)) {
    own_batch = d->batching_.count;
    chain.pop_back();
    while (chain.size() > 1 && IsPrefetch(*chain.back())) chain.pop_back();
  }
  if (options.per_worker) return CreatePerWorker(std::move(d), std::move(chain), own_batch);
  if (own_batch > 0 && options.global_batch > 0 && own_batch != options.global_batch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the dataset is batched by ", own_batch, " and fit's batch_size is ", options.global_batch,
        ": give the global batch once (a dataset's own batch is the global one)"));
  }
  d->global_batch_ = own_batch > 0              ? own_batch
                     : options.global_batch > 0 ? options.global_batch
                                                : options.default_batch;
  if (d->global_batch_ <= 0) {
    return absl::InvalidArgumentError(
        "fit on an unbatched dataset needs batch_size (the global batch)");
  }
  if (d->global_batch_ < d->replicas_) {
    return absl::InvalidArgumentError(absl::StrCat("a global batch of ", d->global_batch_,
                                                   " cannot be split over ", d->replicas_,
                                                   " replicas"));
  }
  d->element_spec_ = chain.back()->spec();
  const int64_t files = chain.front()->file_count();
  AutoShardPolicy policy = options.policy;
  if (policy == AutoShardPolicy::kAuto) {
    policy = files >= d->replicas_ ? AutoShardPolicy::kFile : AutoShardPolicy::kData;
  }
  if (policy == AutoShardPolicy::kOff) {
    return absl::InvalidArgumentError(
        "a streamed dataset is sharded by FILE or DATA (with OFF every worker would train on "
        "all of it)");
  }
  if (policy == AutoShardPolicy::kFile && files < d->replicas_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the FILE shard policy needs at least as many files as workers: ", files, " file",
        files == 1 ? "" : "s", " for ", d->replicas_, " workers (use DATA, or AUTO)"));
  }
  d->policy_ = policy;
  // Every worker must read alike: the same global batch, policy and files.
  int64_t agreed[6] = {d->global_batch_,
                       -d->global_batch_,
                       static_cast<int64_t>(policy),
                       -static_cast<int64_t>(policy),
                       files,
                       -files};
  RW_RETURN_IF_ERROR(
      strategy->communicator()->AllReduce(agreed, 6, DataType::kInt64, ReduceOp::kMin));
  if (agreed[0] != -agreed[1] || agreed[2] != -agreed[3] || agreed[4] != -agreed[5]) {
    return MismatchError(absl::StrCat(
        "the workers read their data differently: the global batch, the shard policy or the "
        "number of files differ (this worker, rank ",
        d->rank_, ": global batch ", d->global_batch_, ", policy ", AutoShardPolicyName(policy),
        ", ", files, " files): every worker must make the same dataset"));
  }
  if (policy == AutoShardPolicy::kFile) {
    Pipeline local(chain.back());
    const int64_t share = ReplicaShare(d->global_batch_, d->replicas_, d->rank_);
    local =
        d->batching_.padded ? local.PaddedBatch(share, d->batching_.padding) : local.Batch(share);
    if (options.prefetch_batches > 0) local = local.Prefetch(options.prefetch_batches);
    d->local_.emplace(std::move(local));
    return d;
  }
  // DATA: Maps (and prefetches) move up past the nodes that choose by position:
  // they make the same elements either way, and then run only on this worker's.
  bool rebuildable = true;
  for (size_t i = 1; i < chain.size(); ++i) {
    rebuildable = rebuildable && chain[i]->WithInput(chain[i - 1]) != nullptr;
  }
  if (!rebuildable) {
    d->data_chain_ = {chain.back()};
    d->data_shard_at_ = 1;
    return d;
  }
  for (bool moved = true; moved;) {
    moved = false;
    for (size_t i = 1; i + 1 < chain.size(); ++i) {
      if (chain[i]->kind() == PipelineNode::Kind::kElementwise &&
          chain[i + 1]->kind() == PipelineNode::Kind::kPosition) {
        std::swap(chain[i], chain[i + 1]);
        moved = true;
      }
    }
  }
  int shard_at = 1;
  for (size_t i = 0; i < chain.size(); ++i) {
    if (chain[i]->kind() != PipelineNode::Kind::kElementwise) shard_at = static_cast<int>(i) + 1;
  }
  d->data_chain_ = std::move(chain);
  d->data_shard_at_ = shard_at;
  return d;
}

absl::StatusOr<std::unique_ptr<DistributedPipeline>> DistributedPipeline::CreatePerWorker(
    std::unique_ptr<DistributedPipeline> d, std::vector<std::shared_ptr<const PipelineNode>> chain,
    int64_t own_batch) {
  const DistributedPipelineOptions& options = d->options_;
  // This worker's batch: its dataset's own (the per-replica one), else its share.
  const int64_t global = options.global_batch > 0 ? options.global_batch : options.default_batch;
  const int64_t mine = own_batch > 0 ? own_batch : ReplicaShare(global, d->replicas_, d->rank_);
  if (mine <= 0) {
    const absl::Status failed = absl::InvalidArgumentError(absl::StrCat(
        "a dataset function's data on rank ", d->rank_, " has no batch (a global batch of ", global,
        " for ", d->replicas_, " replicas)"));
    d->strategy_->Abort(failed);  // The others learn it instead of waiting to agree.
    return failed;
  }
  int64_t agreed[2] = {mine, own_batch > 0 ? 1 : 0};
  RW_RETURN_IF_ERROR(
      d->strategy_->communicator()->AllReduce(agreed, 2, DataType::kInt64, ReduceOp::kSum));
  if (agreed[1] != 0 && agreed[1] != d->replicas_) {
    return MismatchError(
        "the dataset functions' data differ: some workers batch it, others do not (batch "
        "every worker's, by InputContext::PerReplicaBatch, or none)");
  }
  d->global_batch_ = agreed[0];
  d->policy_ = AutoShardPolicy::kOff;
  d->element_spec_ = chain.back()->spec();
  Pipeline local(chain.back());
  local = d->batching_.padded ? local.PaddedBatch(mine, d->batching_.padding) : local.Batch(mine);
  if (options.prefetch_batches > 0) local = local.Prefetch(options.prefetch_batches);
  d->local_.emplace(std::move(local));
  return d;
}

absl::Status DistributedPipeline::Regroup(int replicas, int rank) {
  if (policy_ != AutoShardPolicy::kData) {
    return absl::FailedPreconditionError(absl::StrCat(
        "elastic training re-shards streamed data by its position in one common order: it "
        "needs the DATA shard policy, not ",
        AutoShardPolicyName(policy_)));
  }
  if (replicas < 1 || rank < 0 || rank >= replicas || global_batch_ < replicas) {
    return absl::InternalError(absl::StrCat("stream regroup: rank ", rank, " of ", replicas,
                                            ", global batch ", global_batch_));
  }
  it_.reset();  // Its threads read with the old split.
  pending_.reset();
  replicas_ = replicas;
  rank_ = rank;
  return absl::OkStatus();
}

absl::Status DistributedPipeline::StartPass(int64_t pass, int64_t skip_steps,
                                            PipelineStats* stats) {
  IterateOptions iterate;
  iterate.pass = pass;
  iterate.ignore_errors = options_.ignore_errors;
  iterate.autotune_threads = options_.autotune_threads;
  iterate.stats = stats != nullptr ? stats : options_.stats;
  it_.reset();
  pending_.reset();
  ended_ = false;
  step_ = skip_steps;
  if (policy_ != AutoShardPolicy::kData) {
    // FILE: this worker's files; OFF (a dataset function's): all of its own.
    iterate.num_shards = policy_ == AutoShardPolicy::kFile ? replicas_ : 1;
    iterate.shard_index = policy_ == AutoShardPolicy::kFile ? rank_ : 0;
    it_ = local_->Iterate(iterate);
    Element dropped;
    for (int64_t s = 0; s < skip_steps && !ended_; ++s) {
      absl::StatusOr<bool> more = it_->Next(&dropped);
      if (!more.ok()) return more.status();
      ended_ = !*more;
    }
    return absl::OkStatus();
  }
  // DATA: the chain rebuilt over its source with the block shard in its place.
  // Every worker reads the same records: one counts those its source skips.
  iterate.count_source_skips = rank_ == 0;
  std::shared_ptr<const PipelineNode> node = data_chain_[0];
  for (size_t i = 1; i <= data_chain_.size(); ++i) {
    if (static_cast<int>(i) == data_shard_at_) {
      node = std::make_shared<BlockShardNode>(std::move(node), global_batch_, replicas_, rank_,
                                              skip_steps);
    }
    if (i < data_chain_.size()) node = data_chain_[i]->WithInput(std::move(node));
  }
  it_ = Pipeline(std::move(node)).Iterate(iterate);
  return absl::OkStatus();
}

absl::Status DistributedPipeline::NextLocal(Element* batch) {
  if (policy_ != AutoShardPolicy::kData) {
    if (!ended_) {
      absl::StatusOr<bool> more = it_->Next(batch);
      if (!more.ok()) return more.status();
      if (*more) return absl::OkStatus();
      ended_ = true;
    }
    return StackElements(element_spec_, {}, 0, false, {}, batch);
  }
  // DATA: the elements tagged with this step (none when it was filtered away).
  // The last step's rows go back to the reader as it hands out elements (Next
  // swaps): its buffers are reused, not allocated per element.
  for (Element& row : rows_) spare_.push_back(std::move(row));
  rows_.clear();
  while (true) {
    if (!pending_.has_value()) {
      if (ended_) break;
      Element e;
      if (!spare_.empty()) {
        e = std::move(spare_.back());
        spare_.pop_back();
      }
      absl::StatusOr<bool> more = it_->Next(&e);
      if (!more.ok()) return more.status();
      if (!*more) {
        ended_ = true;
        break;
      }
      pending_.emplace(std::move(e));
    }
    if (pending_->step != step_) break;  // A later step's.
    rows_.push_back(std::move(*pending_));
    pending_.reset();
  }
  return StackElements(element_spec_, rows_, static_cast<int64_t>(rows_.size()), batching_.padded,
                       batching_.padding, batch);
}

absl::StatusOr<bool> DistributedPipeline::NextStep(Element* batch, double* weight) {
  absl::Status local = NextLocal(batch);
  if (!local.ok()) {
    // What this worker cannot read stops every worker at once, with its cause.
    const absl::Status cause = InvalidDataError(local.message());
    strategy_->Abort(cause);
    return cause;
  }
  ++step_;
  const int64_t mine = batch->values.empty() ? 0 : batch->values[0].shape()[0];
  int64_t all = mine;
  RW_RETURN_IF_ERROR(
      strategy_->communicator()->AllReduce(&all, 1, DataType::kInt64, ReduceOp::kSum));
  if (all == 0) return false;
  // As DistributedDataset::GradientWeightAt: exactly 1 when every replica has as many.
  *weight = mine * replicas_ == all
                ? 1.0
                : static_cast<double>(mine * replicas_) / static_cast<double>(all);
  return true;
}

}  // namespace ringwork
