// An input pipeline with tf.data's vocabulary, over elements of named typed
// features: sources that stream from files (TFRecord, CSV, NumPy, image folders)
// or come from memory or your own code, and transformations (Map on a pool of
// threads, Filter, Interleave, Shuffle with a buffer, Cache, Take, Skip, Repeat,
// Batch, PaddedBatch, Prefetch). A Pipeline is an immutable description, cheap to
// copy; Iterate makes the iterator of one pass, which reads files as it needs
// them through bounded buffers.
//
//   Pipeline train = TFRecordPipeline(files)                // {"record": string}
//                        .Map(ParseExamplesFn(parser), kAutotune)
//                        .Shuffle(10000, /*seed=*/42)
//                        .Batch(256);
//   std::unique_ptr<ElementIterator> it = train.Iterate({.pass = 0});
//   Element batch;
//   while (true) {
//     RW_ASSIGN_OR_RETURN(bool more, it->Next(&batch));
//     if (!more) break;
//     ... batch.values[i]: feature i with a leading dimension ...
//   }
//
// Order is deterministic (a parallel Map keeps its input's order, as tf.data's
// deterministic=True); a pass's order is a function of the seeds and the pass.
// Errors name the element's file and record; the first one ends the iterator.
// Threads: an iterator is used by one thread; Map and Prefetch run threads of
// their own, joined when the iterator is destroyed.
#ifndef RINGWORK_DATA_PIPELINE_PIPELINE_H_
#define RINGWORK_DATA_PIPELINE_PIPELINE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/pipeline/element.h"
#include "data/pipeline/pipeline_stats.h"

namespace ringwork {

// num_parallel_calls: as many threads as this worker's cores (tf.data.AUTOTUNE).
inline constexpr int kAutotune = -1;

// How a pass is read.
struct IterateOptions {
  int64_t pass = 0;  // Seeds a Shuffle's order (each pass in a new order).
  // Sources of several files keep files shard_index, shard_index + num_shards, ...
  // (tf.distribute's FILE policy).
  int num_shards = 1;
  int shard_index = 0;
  // The threads kAutotune stands for (0: the process's cores).
  int autotune_threads = 0;
  // Records or lines a source cannot read or parse are skipped and counted, not
  // an error (tf.data's ignore_errors).
  bool ignore_errors = false;
  PipelineStats* stats = nullptr;  // Not owned; where stages count (may be null).
  // Whether sources count the records they skip: a distributed reader (DATA) has
  // every worker read the same records, and lets one count them.
  bool count_source_skips = true;
};

class ElementIterator {
 public:
  virtual ~ElementIterator() = default;
  // The next element into `*out`; false at the end of the pass.
  virtual absl::StatusOr<bool> Next(Element* out) = 0;
};

// A node of the pipeline's graph (sources and transformations implement it).
class PipelineNode {
 public:
  virtual ~PipelineNode() = default;
  virtual const ElementSpec& spec() const = 0;
  virtual std::unique_ptr<ElementIterator> MakeIterator(const IterateOptions& options) const = 0;
  // Its name in statistics and messages ("tfrecord", "map", ...).
  virtual std::string name() const = 0;
  // The node it reads from (null for a source).
  virtual std::shared_ptr<const PipelineNode> input() const { return nullptr; }
  // Sources of files: how many (the FILE policy needs at least one per worker).
  virtual int64_t file_count() const { return 0; }
  // Elements a pass gives when known without reading (tf.data's cardinality); -1: unknown.
  virtual int64_t cardinality() const { return -1; }

  // What a distributed reader needs to rewrite a pipeline (strategy/distributed_pipeline.h):
  // the kind of node, and the same node over another input (null for a source).
  enum class Kind {
    kSource,
    kElementwise,  // One element in, one out, order kept: Map, Prefetch.
    kPosition,     // Chooses elements by position only: Shuffle, Take, Skip, Repeat, Shard.
    kOther,        // Filter, Cache, Interleave.
    kBatch,        // Batch, PaddedBatch.
  };
  virtual Kind kind() const { return Kind::kOther; }
  virtual std::shared_ptr<const PipelineNode> WithInput(
      std::shared_ptr<const PipelineNode> input) const {
    return nullptr;
  }
};

// f(element) -> its replacement (any spec: the one the Map declares).
using MapFn = std::function<absl::Status(Element* element)>;
using PredicateFn = std::function<absl::StatusOr<bool>(const Element& element)>;
using RandomMapFn = std::function<absl::Status(Element* element, uint64_t draw)>;

class Pipeline {
 public:
  explicit Pipeline(std::shared_ptr<const PipelineNode> node) : node_(std::move(node)) {}

  const ElementSpec& spec() const { return node_->spec(); }
  const PipelineNode& node() const { return *node_; }
  const std::shared_ptr<const PipelineNode>& shared_node() const { return node_; }
  // The iterator of one pass (it keeps the pipeline's nodes alive).
  std::unique_ptr<ElementIterator> Iterate(const IterateOptions& options = {}) const;

  // `fn` turns each element into one of `out_spec` (default: the same spec), on
  // `num_parallel_calls` threads (1: the caller's; kAutotune: the worker's cores),
  // in order. `name` names the stage in PipelineStats (what it does: "decode").
  Pipeline Map(MapFn fn, int num_parallel_calls = 1, ElementSpec out_spec = {},
               std::string name = "map") const;
  // As Map, `fn` also given a random 64-bit draw of (seed, pass, the element's
  // place in its source): an element draws alike on any worker count, thread
  // count or resume point, and anew each pass (random augmentation).
  Pipeline MapRandom(RandomMapFn fn, uint64_t seed, int num_parallel_calls = 1,
                     ElementSpec out_spec = {}, std::string name = "random_map") const;
  Pipeline Filter(PredicateFn keep) const;
  // tf.data's buffer semantics: a buffer of `buffer_size` elements, each output a
  // uniformly drawn one replaced by the next input; the order is seeded by
  // (seed, pass).
  Pipeline Shuffle(int64_t buffer_size, uint64_t seed) const;
  Pipeline Take(int64_t count) const;
  Pipeline Skip(int64_t count) const;
  // Each pass goes through the input `count` times (-1: forever), as passes
  // pass, pass + 1, ... of the input.
  Pipeline Repeat(int64_t count = -1) const;
  // The first pass's elements kept in memory (path "") or written to `path`, and
  // later passes read from there (tf.data's cache).
  Pipeline Cache(const std::string& path = "") const;
  // `count` elements stacked into one (each feature gains a leading dimension;
  // all must have the same shape); the last batch may be short unless
  // drop_remainder.
  Pipeline Batch(int64_t count, bool drop_remainder = false) const;
  // As Batch, variable dimensions padded to the longest in the batch with
  // `padding` (per feature in spec order; empty: 0 and "").
  Pipeline PaddedBatch(int64_t count, std::vector<double> padding = {},
                       bool drop_remainder = false) const;
  // Up to `buffer` elements made ahead on a thread of its own.
  Pipeline Prefetch(int64_t buffer) const;
  // Elements i with i % num_shards == index (tf.data's shard).
  Pipeline Shard(int64_t num_shards, int64_t index) const;

 private:
  std::shared_ptr<const PipelineNode> node_;
};

// Elements made by your code: `make(pass)` gives the pass's generator, which puts
// the next element into its argument and returns false at the end.
using Generator = std::function<absl::StatusOr<bool>(Element* element)>;
Pipeline GeneratorPipeline(ElementSpec spec, std::function<Generator(int64_t pass)> make,
                           int64_t cardinality = -1);
// The rows of `columns` (each a named TypedTensor whose first dimension is the
// element count; all the same count), as tf.data.Dataset.from_tensor_slices.
absl::StatusOr<Pipeline> TensorSlicesPipeline(
    std::vector<std::pair<std::string, TypedTensor>> columns);
// The files a glob names, sorted: elements {"path": string}. NOT_FOUND naming the
// pattern when none.
absl::StatusOr<Pipeline> ListFilesPipeline(const std::string& pattern);
absl::StatusOr<std::vector<std::string>> ExpandGlob(const std::string& pattern);

// Batch and PaddedBatch's stacking, for readers that batch themselves: the first
// `count` of `rows` into `out` (each feature gains a leading dimension). Without
// `padded`, features must have equal shapes; with it variable dimensions are
// padded to the longest with `padding` (per feature; missing: 0).
absl::Status StackElements(const ElementSpec& spec, const std::vector<Element>& rows, int64_t count,
                           bool padded, const std::vector<double>& padding, Element* out);
// The batch size, padding and drop_remainder of a Batch or PaddedBatch node;
// false for another node.
struct BatchSettings {
  int64_t count = 0;
  bool drop_remainder = false, padded = false;
  std::vector<double> padding;
};
bool BatchSettingsOf(const PipelineNode& node, BatchSettings* out);

// f(element) -> a pipeline whose elements replace it: cycle_length of them read
// at once, block_length elements from each in turn (tf.data's interleave).
using InterleaveFn = std::function<absl::StatusOr<Pipeline>(const Element& element)>;
Pipeline Interleave(const Pipeline& input, InterleaveFn fn, ElementSpec out_spec,
                    int64_t cycle_length, int64_t block_length = 1);

}  // namespace ringwork

#endif  // RINGWORK_DATA_PIPELINE_PIPELINE_H_
