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

DataPosition DistributedDataset::PositionAfter(int64_t steps) const {
  if (steps_per_pass <= 0) return {};
  return {steps / steps_per_pass, (steps % steps_per_pass) * global_batch_size};
}

int64_t DistributedDataset::StepsLeftInPass(const DataPosition& at) const {
  const int64_t left = common.examples_per_pass() - at.offset;
  return left <= 0 ? 0 : (left + global_batch_size - 1) / global_batch_size;
}

absl::StatusOr<DistributedDataset> DistributedDataset::Regrouped(int new_replicas, int new_rank,
                                                                 const DataPosition& at,
                                                                 int64_t global_batch) const {
  if (common.examples().count() == 0) {
    return absl::FailedPreconditionError(
        "elastic training re-shards the data by its position in one common order: it needs "
        "the DATA shard policy (FILE and OFF give each worker data of its own)");
  }
  if (drop_remainder) {
    return absl::FailedPreconditionError("elastic training does not support drop_remainder");
  }
  const int64_t pass_examples = common.examples_per_pass();
  if (new_replicas < 1 || new_rank < 0 || new_rank >= new_replicas || global_batch < new_replicas ||
      at.pass < 0 || at.offset < 0 || at.offset >= pass_examples) {
    return absl::InternalError(absl::StrCat(
        "elastic re-shard: rank ", new_rank, " of ", new_replicas, ", global batch ", global_batch,
        ", at example ", at.offset, " of pass ", at.pass, " (", pass_examples, " per pass)"));
  }
  DistributedDataset d = *this;
  d.block_replicas = new_replicas;
  d.rank = new_rank;
  d.global_batch_size = global_batch;
  d.per_replica_batch_size = (global_batch + new_replicas - 1) / new_replicas;
  d.steps_per_pass = (pass_examples + global_batch - 1) / global_batch;
  d.shard_examples.clear();
  d.local = common;
  return d;
}

std::unique_ptr<StepIterator> DistributedDataset::Iterate(int64_t first_step) const {
  return std::make_unique<StepIterator>(*this, first_step);
}

std::unique_ptr<StepIterator> DistributedDataset::IterateFrom(const DataPosition& at) const {
  return std::make_unique<StepIterator>(*this, at);
}

StepIterator::StepIterator(const DistributedDataset& data, int64_t first_step)
    : data_(data), step_(first_step), position_(data.PositionAfter(first_step)) {}

StepIterator::StepIterator(const DistributedDataset& data, const DataPosition& at)
    : data_(data), step_(0), position_(at) {}

DataPosition StepIterator::position() const {
  return data_.block_replicas > 0 ? position_ : data_.PositionAfter(step_);
}

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

bool StepIterator::NextBlock(Batch* batch) {
  if (data_.passes >= 0 && position_.pass >= data_.passes) return false;
  if (position_.pass != pass_) {
    pass_ = position_.pass;
    order_ = data_.common.Order(pass_);
  }
  const int64_t pass_examples = static_cast<int64_t>(order_.size());
  const Block step{position_.offset, std::clamp<int64_t>(pass_examples - position_.offset, 0,
                                                         data_.global_batch_size)};
  const Block mine = ReplicaBlock(step, data_.block_replicas, data_.rank);
  GatherBatch(data_.common.examples(), order_, static_cast<size_t>(mine.begin),
              static_cast<size_t>(mine.begin + mine.count), batch);
  // As GradientWeightAt: exactly 1 when every replica has as many as the others.
  const int64_t n = data_.block_replicas;
  weight_ = step.count == 0 ? 0.0
            : mine.count * n == step.count
                ? 1.0
                : static_cast<double>(mine.count * n) / static_cast<double>(step.count);
  position_.offset += step.count;
  if (position_.offset >= pass_examples) position_ = {position_.pass + 1, 0};
  ++step_;
  return true;
}

bool StepIterator::Next(Batch* batch) {
  if (!status_.ok() || data_.steps_per_pass <= 0) return false;
  if (data_.block_replicas > 0) return NextBlock(batch);
  const int64_t pass = step_ / data_.steps_per_pass;
  const int64_t in_pass = step_ % data_.steps_per_pass;
  if (data_.passes >= 0 && pass >= data_.passes) return false;
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
                    ? absl::InternalError(absl::StrCat("pass ", pass, " ended before step ",
                                                       in_pass, " of its ", data_.steps_per_pass))
                    : batches_->status();
      return false;
    }
    if (batch->size() != expected) {
      status_ = absl::InternalError(absl::StrCat("pass ", pass, ", step ", in_pass, ": a batch of ",
                                                 batch->size(), " examples, expected ", expected));
      return false;
    }
  }
  weight_ = data_.GradientWeightAt(in_pass);
  ++step_;
  return true;
}

}  // namespace ringwork
