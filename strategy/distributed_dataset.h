// One worker's part of a data set in synchronous training: which examples it
// trains on at every global step, how many the other workers do, and so how much
// its gradient weighs in the average.
//
//   DistributedDataset data = *strategy.DistributeDataset(dataset, /*global_batch=*/256);
//   std::unique_ptr<StepIterator> it = data.Iterate(/*first_step=*/0);
//   Batch batch;
//   for (int64_t step = 0; step < data.steps_per_pass && it->Next(&batch); ++step) {
//     reducer.BeginStep(data.GradientWeightAt(step));   // 0 for an empty batch
//     ...
//   }
//
// Terms: global steps count from 0 over the whole run. A *pass* is one walk
// through the data, pass q in its own shuffled order; it has `steps_per_pass`
// steps, the most per-replica batches any worker has in it. Every example of a
// pass is trained on exactly once: the last global batch may be short (its
// examples split over the replicas as evenly as the shard policy allows), and a
// worker whose data for the pass has ended (that short batch, or a smaller FILE
// shard) takes part with an empty batch. The gradient average is weighted by the
// real example counts, so it equals the mean over every example of the step.
#ifndef RINGWORK_STRATEGY_DISTRIBUTED_DATASET_H_
#define RINGWORK_STRATEGY_DISTRIBUTED_DATASET_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "data/dataset.h"

namespace ringwork {

class StepIterator;

// Where the next step's examples begin (DATA): in pass `pass` of the common order,
// after its first `offset` examples.
struct DataPosition {
  int64_t pass = 0;
  int64_t offset = 0;
  bool operator==(const DataPosition& o) const { return pass == o.pass && offset == o.offset; }
};

struct DistributedDataset {
  // This worker's shard of one pass (Iterate(pass)), in per-replica batches.
  Dataset local;
  int64_t global_batch_size = 0;
  int64_t per_replica_batch_size = 0;
  // Full batches only: the steps at which every worker has a full per-replica
  // batch (the rest of each pass is not trained on), for loops that need one batch
  // shape. Keras' fit keeps the short batch.
  bool drop_remainder = false;
  int64_t steps_per_pass = 0;   // Equal on every worker.
  int64_t steps_per_epoch = 0;  // Keras' default epoch: one pass.
  int64_t passes = 1;           // Passes the data gives (its Repeat count); -1: forever.
  int rank = 0;
  uint64_t seed = 0;                    // The agreed shuffle seed (the chief's).
  std::vector<int64_t> shard_examples;  // Examples of one pass, by rank.
  // DATA: the one order that every worker shards (its Order(pass)).
  Dataset common;

  // After an elastic regroup (Regrouped), not 0: the number of replicas that
  // share each step's global batch as contiguous blocks. A step at position
  // (pass, offset) trains on examples [offset, offset + global_batch_size) of the
  // pass's common order (cut at the pass's end; a DATA shard's step t covers the
  // block at t x global_batch_size too), and replica r gets the r-th of
  // `block_replicas` blocks of it, their sizes differing by at most one, so any
  // number of survivors can share any global batch, and the global batch may
  // change at any step (elastic_batch per_replica).
  int block_replicas = 0;

  // Examples worker `rank` trains on at step `step_in_pass` of a pass.
  int64_t ExamplesAt(int worker, int64_t step_in_pass) const;
  // Over every worker.
  int64_t GlobalExamplesAt(int64_t step_in_pass) const;
  // replicas x this worker's examples / all examples of the step: the factor of
  // this replica's mean gradient before the MEAN all-reduce (1 when every replica
  // has a full batch, 0 for an empty one).
  double GradientWeightAt(int64_t step_in_pass) const;
  // Examples trained on in one pass, over every worker.
  int64_t ExamplesPerPass() const;
  int replicas() const;
  // Where `steps` global steps from the start end, with this global batch
  // throughout (DATA: every step but a pass's last is full).
  DataPosition PositionAfter(int64_t steps) const;
  // Steps from `at` to the end of its pass (DATA).
  int64_t StepsLeftInPass(const DataPosition& at) const;
  // This data for a regrouped ring of `replicas` (this worker: `rank`) that goes on
  // at `at` (the exact example reached) with `global_batch` examples per step: the
  // rest of that pass, then whole passes. DATA only (`common` set); every worker
  // computes the same split, no collective.
  absl::StatusOr<DistributedDataset> Regrouped(int replicas, int rank, const DataPosition& at,
                                               int64_t global_batch) const;
  // The batches from global step `first_step` on, one per step: the way to loop
  // over the data (the iterator refers to this object, which must outlive it).
  std::unique_ptr<StepIterator> Iterate(int64_t first_step) const;
  // Blocks (after Regrouped): the batches from position `at` on.
  std::unique_ptr<StepIterator> IterateFrom(const DataPosition& at) const;
};

class StepIterator {
 public:
  StepIterator(const DistributedDataset& data, int64_t first_step);
  StepIterator(const DistributedDataset& data, const DataPosition& at);  // Blocks.
  // The batch of the next step (no examples when this worker has none then);
  // false when the passes are used up or the input failed (status()).
  bool Next(Batch* batch);
  // The steps Next returned, counted from `first_step` (0 from a position).
  int64_t step() const { return step_; }
  // Where the batch Next returns next begins (DATA).
  DataPosition position() const;
  // Of the batch Next returned last: replicas x its examples / the step's
  // examples (DistributedDataset::GradientWeightAt; 0 when the step has none).
  double gradient_weight() const { return weight_; }
  absl::Status status() const { return status_; }

 private:
  bool StartPass(int64_t pass, int64_t skip_steps);

  // Blocks: this worker's examples of the step at position_, gathered from the
  // pass's order.
  bool NextBlock(Batch* batch);

  const DistributedDataset& data_;  // Not owned.
  int64_t step_;
  DataPosition position_;  // Blocks: of the next batch.
  double weight_ = 0;
  int64_t pass_ = -1;
  std::unique_ptr<Dataset::Iterator> batches_;
  std::vector<int64_t> order_;  // Blocks: the pass's common order.
  absl::Status status_;
};

}  // namespace ringwork

#endif  // RINGWORK_STRATEGY_DISTRIBUTED_DATASET_H_
