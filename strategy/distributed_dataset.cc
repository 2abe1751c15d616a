#include "strategy/distributed_dataset.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace ringwork {

namespace {

// Examples of step `step_in_pass` in blocks: where its global batch starts in the
// pass's order and how many it has.
struct Block {
  int64_t begin = 0;
  int64_t count = 0;
};

Block GlobalBlock(int64_t pass_examples, int64_t global_batch, int64_t step_in_pass) {
  const int64_t begin = step_in_pass * global_batch;
  return {begin, std::clamp<int64_t>(pass_examples - begin, 0, global_batch)};
}

// Replica `worker`'s part of `block` among `replicas`.
Block ReplicaBlock(const Block& block, int replicas, int worker) {
  const int64_t base = block.count / replicas;
  const int64_t extra = block.count % replicas;
  return {block.begin + worker * base + std::min<int64_t>(worker, extra),
          base + (worker < extra ? 1 : 0)};
}

}  // namespace

int DistributedDataset::replicas() const {
  return block_replicas > 0 ? block_replicas : static_cast<int>(shard_examples.size());
}

int64_t DistributedDataset::ExamplesAt(int worker, int64_t step_in_pass) const {
  if (block_replicas > 0) {
    const Block step = GlobalBlock(common.examples_per_pass(), global_batch_size, step_in_pass);
    return ReplicaBlock(step, block_replicas, worker).count;
  }
  const int64_t shard = shard_examples[static_cast<size_t>(worker)];
  const int64_t b = per_replica_batch_size;
  if (drop_remainder) return step_in_pass < steps_per_pass ? b : 0;
  return std::clamp<int64_t>(shard - step_in_pass * b, 0, b);
}

int64_t DistributedDataset::GlobalExamplesAt(int64_t step_in_pass) const {
  int64_t total = 0;
  for (int r = 0; r < replicas(); ++r) total += ExamplesAt(r, step_in_pass);
  return total;
}

double DistributedDataset::GradientWeightAt(int64_t step_in_pass) const {
  const int64_t all = GlobalExamplesAt(step_in_pass);
  if (all == 0) return 0;
  const int64_t mine = ExamplesAt(rank, step_in_pass);
  const int64_t n = replicas();
  // Exactly 1 when every replica has as many as the others (a full step).
  if (mine * n == all) return 1;
  return static_cast<double>(mine * n) / static_cast<double>(all);
}

int64_t DistributedDataset::ExamplesPerPass() const {
  int64_t total = 0;
  for (int64_t s = 0; s < steps_per_pass; ++s) total += GlobalExamplesAt(s);
  return total;
}

absl::StatusOr<DistributedDataset> DistributedDataset::Regrouped(int new_replicas, int new_rank,
                                                                 int64_t steps_done) const {
  if (common.examples().count() == 0) {
    return absl::FailedPreconditionError(
        "elastic training re-shards the data by its position in one common order: it needs "
        "the DATA shard policy (FILE and OFF give each worker data of its own)");
  }
  if (drop_remainder) {
    return absl::FailedPreconditionError("elastic training does not support drop_remainder");
  }
  const int64_t in_pass = steps_per_pass > 0 ? steps_done % steps_per_pass : 0;
  // Every step so far trained on one block of the common order; the next one
  // starts where they ended.
  int64_t trained = 0;
  for (int64_t s = 0; s < in_pass; ++s) trained += GlobalExamplesAt(s);
  const Block next = GlobalBlock(common.examples_per_pass(), global_batch_size, in_pass);
  if (trained != next.begin || next.count == 0) {
    return absl::InternalError(absl::StrCat(
        "elastic re-shard: after ", in_pass, " steps of the pass ", trained,
        " examples were trained on, but the steps' blocks say ", next.begin));
  }
  DistributedDataset d = *this;
  d.block_replicas = new_replicas;
  d.rank = new_rank;
  d.per_replica_batch_size = (global_batch_size + new_replicas - 1) / new_replicas;
  d.shard_examples.clear();
  d.local = common;
  return d;
}

std::unique_ptr<StepIterator> DistributedDataset::Iterate(int64_t first_step) const {
  return std::make_unique<StepIterator>(*this, first_step);
}

StepIterator::StepIterator(const DistributedDataset& data, int64_t first_step)
    : data_(data), step_(first_step) {}

bool StepIterator::StartPass(int64_t pass, int64_t skip_steps) {
  pass_ = pass;
  batches_ = data_.local.Iterate(pass);
  struct Batch skipped;
  for (int64_t s = 0; s < skip_steps; ++s) {
    if (data_.ExamplesAt(data_.rank, s) == 0) break;
    if (!batches_->Next(&skipped)) {
      status_ = batches_->status().ok()
                    ? absl::InternalError(absl::StrCat("pass ", pass, ": the input ended after ", s,
                                                       " of the ", skip_steps,
                                                       " batches a resumed run skips"))
                    : batches_->status();
      return false;
    }
  }
  return true;
}

bool StepIterator::NextBlock(int64_t pass, int64_t in_pass, Batch* batch) {
  if (pass != pass_) {
    pass_ = pass;
    order_ = data_.common.Order(pass);
  }
  const Block step = GlobalBlock(static_cast<int64_t>(order_.size()), data_.global_batch_size, in_pass);
  const Block mine = ReplicaBlock(step, data_.block_replicas, data_.rank);
  GatherBatch(data_.common.examples(), order_, static_cast<size_t>(mine.begin),
              static_cast<size_t>(mine.begin + mine.count), batch);
  ++step_;
  return true;
}

bool StepIterator::Next(Batch* batch) {
  if (!status_.ok() || data_.steps_per_pass <= 0) return false;
  const int64_t pass = step_ / data_.steps_per_pass;
  const int64_t in_pass = step_ % data_.steps_per_pass;
  if (data_.passes >= 0 && pass >= data_.passes) return false;
  if (data_.block_replicas > 0) return NextBlock(pass, in_pass, batch);
  if (pass != pass_ && !StartPass(pass, in_pass)) return false;
  const int64_t expected = data_.ExamplesAt(data_.rank, in_pass);
  if (expected == 0) {
    // This worker's data for the pass has ended: an empty batch of the right shape.
    Shape shape = data_.local.examples().example_shape();
    shape.insert(shape.begin(), 0);
    batch->features.Resize(shape);
    batch->labels.clear();
  } else {
    if (!batches_->Next(batch)) {
      status_ = batches_->status().ok()
                    ? absl::InternalError(absl::StrCat("pass ", pass, " ended before step ", in_pass,
                                                       " of its ", data_.steps_per_pass))
                    : batches_->status();
      return false;
    }
    if (batch->size() != expected) {
      status_ = absl::InternalError(absl::StrCat("pass ", pass, ", step ", in_pass, ": a batch of ",
                                                 batch->size(), " examples, expected ", expected));
      return false;
    }
  }
  ++step_;
  return true;
}

}  // namespace ringwork
