// A Pipeline read by every worker of the ring for training, one step at a time:
// each step's global batch split over the replicas (unevenly when the workers do
// not divide it, as TensorFlow's rebatching does), every example of a pass
// trained on exactly once, and no worker left waiting when the workers' shares
// differ in size (one that has run out takes part with an empty batch until every
// worker has).
//
//   RW_ASSIGN_OR_RETURN(std::unique_ptr<DistributedPipeline> data,
//                       DistributedPipeline::Create(strategy, pipeline, {.global_batch = 256}));
//   RW_RETURN_IF_ERROR(data->StartPass(/*pass=*/0, /*skip_steps=*/0));
//   Element batch;  double weight;
//   while (true) {
//     RW_ASSIGN_OR_RETURN(bool more, data->NextStep(&batch, &weight));   // collective
//     if (!more) break;                       // every worker's data for the pass ended
//     ... train on batch (possibly 0 rows) with gradient weight `weight` ...
//   }
//
// Sharding (tf.distribute's AutoShardPolicy): FILE gives worker r the files r,
// r + n, ... of the pipeline's source (each reads only its own); DATA has every
// worker read the one common order up to where it is decided (the source and the
// operations that choose elements by position: Shuffle, Take, Skip, ...; Maps are
// moved past those, which does not change what they make) and keep its block of
// each global batch there, before any Map: a worker parses only its own records.
// AUTO is FILE when there are at least as many files as workers, else DATA. A
// batch at the pipeline's end gives the global batch (a different
// FitOptions::batch_size is an error), and a PaddedBatch's padding is kept.
// Threads: the training thread (NextStep runs a collective).
#ifndef RINGWORK_STRATEGY_DISTRIBUTED_PIPELINE_H_
#define RINGWORK_STRATEGY_DISTRIBUTED_PIPELINE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "data/dataset.h"
#include "data/pipeline/pipeline.h"

namespace ringwork {

class MultiWorkerMirroredStrategy;

struct DistributedPipelineOptions {
  // Examples per step over every replica; 0: the pipeline's own Batch, or
  // default_batch when it has none.
  int64_t global_batch = 0;
  int64_t default_batch = 0;
  AutoShardPolicy policy = AutoShardPolicy::kAuto;
  int64_t prefetch_batches = 0;  // Batches assembled ahead on a thread (FILE).
  bool ignore_errors = false;
  int autotune_threads = 0;        // What kAutotune stands for (0: the cores).
  PipelineStats* stats = nullptr;  // Not owned; may be null.
  // The pipeline is this worker's own, sharded by its maker (a dataset function):
  // nothing is sharded here, and its Batch is the per-replica batch (else
  // ReplicaShare of the global batch). The global batch is the sum of the
  // workers' per-replica batches.
  bool per_worker = false;
};

// The global batch `global` split over `replicas`: replica r's share (the first
// global % replicas replicas take one more).
int64_t ReplicaShare(int64_t global, int replicas, int r);

// What a dataset function learns of the worker it makes data for, as
// tf.distribute.InputContext (distribute_datasets_from_function): shard by hand
// with Pipeline::Shard(num_input_pipelines, input_pipeline_id) (or by files), and
// batch by PerReplicaBatch().
struct InputContext {
  int num_input_pipelines = 1;  // The workers.
  int input_pipeline_id = 0;    // This worker's rank.
  int num_replicas_in_sync = 1;
  int64_t global_batch = 0;
  int64_t PerReplicaBatch() const {
    return ReplicaShare(global_batch, num_replicas_in_sync, input_pipeline_id);
  }
};
using DatasetFn = std::function<absl::StatusOr<Pipeline>(const InputContext& context)>;

class DistributedPipeline {
 public:
  // Agrees with every worker on the global batch and the policy (a difference is
  // FAILED_PRECONDITION, exit 7). INVALID_ARGUMENT: FILE with fewer files than
  // workers, a batch size given twice with different values, no batch size.
  static absl::StatusOr<std::unique_ptr<DistributedPipeline>> Create(
      MultiWorkerMirroredStrategy* strategy, const Pipeline& pipeline,
      const DistributedPipelineOptions& options);

  int64_t global_batch() const { return global_batch_; }
  AutoShardPolicy policy() const { return policy_; }  // FILE, DATA; OFF: per worker.
  // One example's features (no batch dimension).
  const ElementSpec& element_spec() const { return element_spec_; }

  // After an elastic regroup: this worker is `rank` of `replicas` now; the next
  // StartPass splits each global batch over them (DATA only: FILE and OFF gave
  // workers data of their own, FAILED_PRECONDITION).
  absl::Status Regroup(int replicas, int rank);
  // Starts pass `pass`, after the `skip_steps` steps this worker already trained
  // in it (a resumed run: FILE reads and drops its own batches; DATA drops
  // skip_steps global batches of the common order before any Map).
  // `stats` (not owned; null: the options') counts this pass's stages; it must
  // outlive the pass (until the next StartPass or this reader's end).
  absl::Status StartPass(int64_t pass, int64_t skip_steps, PipelineStats* stats = nullptr);
  // This worker's batch of the next step (0 rows when its data for the pass has
  // ended) and its gradient weight (replicas x its rows / the step's rows), after
  // one all-reduce of every worker's count. False when every worker's has ended.
  absl::StatusOr<bool> NextStep(Element* batch, double* weight);

 private:
  DistributedPipeline() = default;
  // Create's end for options.per_worker: the chain without its Batch and Prefetch.
  static absl::StatusOr<std::unique_ptr<DistributedPipeline>> CreatePerWorker(
      std::unique_ptr<DistributedPipeline> d,
      std::vector<std::shared_ptr<const PipelineNode>> chain, int64_t own_batch);
  // This worker's next batch from its own stream; 0 rows once it ended.
  absl::Status NextLocal(Element* batch);

  MultiWorkerMirroredStrategy* strategy_ = nullptr;  // Not owned.
  DistributedPipelineOptions options_;
  int64_t global_batch_ = 0;
  AutoShardPolicy policy_ = AutoShardPolicy::kData;
  int replicas_ = 1, rank_ = 0;
  ElementSpec element_spec_;
  BatchSettings batching_;  // Padding of the pipeline's own batch, if any.
  // FILE: the pipeline batched per replica.
  std::optional<Pipeline> local_;
  // DATA: the pipeline's nodes from the source up, Maps moved past the nodes that
  // choose by position, and where the block shard goes among them (built per
  // pass: it knows the steps a resumed pass skips). -1: at the end (a node that
  // cannot be rebuilt over another input).
  std::vector<std::shared_ptr<const PipelineNode>> data_chain_;
  int data_shard_at_ = -1;
  std::unique_ptr<ElementIterator> it_;
  bool ended_ = false;
  int64_t step_ = 0;  // Of the pass.
  // DATA: the element read ahead (the first of a later step), if any.
  std::optional<Element> pending_;
  std::vector<Element> rows_;
  std::vector<Element> spare_;  // Spent rows, whose buffers the reader refills.
};

}  // namespace ringwork

#endif  // RINGWORK_STRATEGY_DISTRIBUTED_PIPELINE_H_
