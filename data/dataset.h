// An input pipeline over in-memory examples, with tf.data's vocabulary: a seeded
// shuffle (a new order every epoch, the same on every worker), sharding between
// workers, batching, repeating, and prefetching on a background thread.
//
//   Examples examples = SyntheticImages(4096, 1024, /*seed=*/1).train;
//   Dataset train = Dataset::FromExamples(std::move(examples))
//                       .Shuffle(/*seed=*/42)
//                       .Batch(64)
//                       .Prefetch(2);
//   auto it = train.Iterate(/*epoch=*/0);
//   Batch batch;
//   while (it->Next(&batch)) {
//     // batch.features [64, 28, 28, 1], batch.labels [64]
//   }
//
// Sharding (AutoShardPolicy, as tf.distribute's): kData keeps every n-th example of
// the shuffled order; kFile keeps the examples of every n-th source file (needs at
// least as many files as shards); kOff keeps everything.
#ifndef RINGWORK_DATA_DATASET_H_
#define RINGWORK_DATA_DATASET_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "data/examples.h"

namespace ringwork {

// kAuto (streamed pipelines): FILE when there are at least as many files as
// workers, else DATA; in-memory examples take DATA. The values are recorded in
// checkpoints: never renumber.
enum class AutoShardPolicy { kData, kFile, kOff, kAuto };
absl::string_view AutoShardPolicyName(AutoShardPolicy policy);
bool ParseAutoShardPolicy(absl::string_view text, AutoShardPolicy* out);

// One step's examples on one replica: the model's input, and what it learns:
// class ids (`labels`), or numbers (`targets`, [n, ...]: regression, multi-label)
// for losses that take them; per-example weights (Keras' sample_weight; empty: 1).
// A model of several outputs learns its first output from `labels` or `targets`
// and the others from `more_targets`, in the model's order of outputs.
struct OutputTargets {
  std::vector<int32_t> labels;
  Tensor targets;
};
struct Batch {
  Tensor features;
  std::vector<int32_t> labels;
  Tensor targets;
  std::vector<float> weights;
  std::vector<OutputTargets> more_targets;
  int64_t size() const {
    return features.rank() > 0 ? features.dim(0) : static_cast<int64_t>(labels.size());
  }
};

class Dataset {
 public:
  Dataset();  // No examples.
  static Dataset FromExamples(Examples examples);

  // Each returns a new dataset; the examples are shared, not copied.
  Dataset Shuffle(uint64_t seed) const;
  Dataset Batch(int64_t batch_size, bool drop_remainder = false) const;
  Dataset Prefetch(int64_t buffer_batches) const;
  // Iterate(epoch) goes on through `count` epochs (epoch, epoch + 1, ...; each in
  // its own shuffled order); -1 repeats forever.
  Dataset Repeat(int64_t count = -1) const;
  absl::StatusOr<Dataset> Shard(int64_t num_shards, int64_t index, AutoShardPolicy policy) const;

  const Examples& examples() const { return *examples_; }
  int64_t batch_size() const { return batch_size_; }
  bool drop_remainder() const { return drop_remainder_; }
  // Passes Iterate(epoch) makes: 1, Repeat's count, or -1 (forever).
  int64_t repeat_count() const { return repeat_; }
  // Examples this shard gives over all its passes, as tf.data's cardinality:
  // kInfiniteCardinality when it repeats forever.
  static constexpr int64_t kInfiniteCardinality = -1;
  int64_t cardinality() const;
  // Examples of one pass (one epoch) of this shard.
  int64_t examples_per_pass() const;
  // Batches of one pass of this shard.
  int64_t batches_per_epoch() const;

  class Iterator {
   public:
    virtual ~Iterator() = default;
    // The next batch; false at the end of the epoch (or after `max_batches`).
    // An input pipeline that produces nothing for `kBatchDeadlineS` is a bug in
    // the pipeline: it ends the epoch with an error (status()).
    virtual bool Next(struct Batch* batch) = 0;
    virtual absl::Status status() const = 0;
  };
  static constexpr double kBatchDeadlineS = 600;
  // The examples of `epoch`, in batches; at most `max_batches` (-1: all).
  std::unique_ptr<Iterator> Iterate(int64_t epoch, int64_t max_batches = -1) const;

  // The example indices of `epoch` for this shard, in order.
  std::vector<int64_t> Order(int64_t epoch) const;

 private:
  explicit Dataset(std::shared_ptr<const Examples> examples) : examples_(std::move(examples)) {}

  std::shared_ptr<const Examples> examples_;
  bool shuffle_ = false;
  uint64_t seed_ = 0;
  int64_t batch_size_ = 1;
  bool drop_remainder_ = false;
  int64_t prefetch_ = 0;
  int64_t repeat_ = 1;
  int64_t num_shards_ = 1, shard_index_ = 0;
  AutoShardPolicy policy_ = AutoShardPolicy::kOff;
};

// Copies the examples `indices` into `batch`.
void GatherBatch(const Examples& examples, const std::vector<int64_t>& indices, size_t begin,
                 size_t end, Batch* batch);

}  // namespace ringwork

#endif  // RINGWORK_DATA_DATASET_H_
