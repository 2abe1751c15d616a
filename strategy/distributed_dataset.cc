#include "strategy/distributed_dataset.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace ringwork {

int64_t DistributedDataset::ExamplesAt(int worker, int64_t step_in_pass) const {
  const int64_t shard = shard_examples[static_cast<size_t>(worker)];
  const int64_t b = per_replica_batch_size;
  if (drop_remainder) return step_in_pass < steps_per_pass ? b : 0;
  return std::clamp<int64_t>(shard - step_in_pass * b, 0, b);
}

int64_t DistributedDataset::GlobalExamplesAt(int64_t step_in_pass) const {
  int64_t total = 0;
  for (int r = 0; r < static_cast<int>(shard_examples.size()); ++r) total += ExamplesAt(r, step_in_pass);
  return total;
}

double DistributedDataset::GradientWeightAt(int64_t step_in_pass) const {
  const int64_t all = GlobalExamplesAt(step_in_pass);
  if (all == 0) return 0;
  const int64_t mine = ExamplesAt(rank, step_in_pass);
  const int64_t replicas = static_cast<int64_t>(shard_examples.size());
  // Exactly 1 when every replica has as many as the others (a full step).
  if (mine * replicas == all) return 1;
  return static_cast<double>(mine * replicas) / static_cast<double>(all);
}

int64_t DistributedDataset::ExamplesPerPass() const {
  int64_t total = 0;
  for (int64_t s = 0; s < steps_per_pass; ++s) total += GlobalExamplesAt(s);
  return total;
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

bool StepIterator::Next(Batch* batch) {
  if (!status_.ok() || data_.steps_per_pass <= 0) return false;
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
