// Averages the gradients of every variable over all replicas, overlapping the
// communication with the backward pass: gradients are laid out in one arena in the
// order the backward pass produces them (last layer first), cut into packs of about
// `bytes_per_pack`, and a pack is all-reduced (MEAN) as soon as all of its
// gradients are final, on a thread of its own, while the caller computes the
// gradients of earlier layers.
//
//   GradientReducer reducer(comm, variables, {.bytes_per_pack = 0, .overlap = true});
//   // every step:
//   reducer.BeginStep();
//   ... backward of the last layer writes v->grad ...;  reducer.Ready(v);
//   ... backward of earlier layers ...;                 reducer.Ready(...);
//   RW_RETURN_IF_ERROR(reducer.FinishStep());   // all gradients are averaged
//
// Threads: BeginStep, Ready and FinishStep from the training thread; packs are
// reduced on "rw-allreduce" (or on the training thread in FinishStep when overlap
// is off). Nothing else may use the Communicator between BeginStep and FinishStep.
// Every worker must create its reducer over the same variables in the same order
// and the same compression.
//
// Packs pay off only while the backward pass runs beside them. A reducer's first
// step agrees (one all-reduce) whether any worker overlaps: when none does, every
// step reduces all dense gradients in one all-reduce, one latency instead of one
// per pack (workers may overlap or not, e.g. on hosts with different cores per
// worker: they then all reduce pack by pack).
//
// With `.compression = GradientCompression::kBFloat16` (Horovod's Compression.fp16,
// DDP's bf16_compress_hook) gradients travel as bfloat16: half the bytes; every hop
// widens to float32, sums, and rounds back; every replica gets the same values. The
// staging buffer holds the largest pack, or all of them when steps reduce in one.
#ifndef RINGWORK_STRATEGY_GRADIENT_REDUCER_H_
#define RINGWORK_STRATEGY_GRADIENT_REDUCER_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/collectives/communicator.h"
#include "strategy/variable.h"

namespace ringwork {

// How gradients travel in the all-reduce.
enum class GradientCompression {
  kNone,      // float32
  kBFloat16,  // bfloat16 on the wire, float32 sums at every hop
};
// "none" or "bf16" (as --allreduce_compression takes them).
absl::StatusOr<GradientCompression> ParseGradientCompression(absl::string_view name);
absl::string_view GradientCompressionName(GradientCompression compression);

// How the gradients of sparse_gradient variables (embedding tables) travel.
enum class SparseReduction {
  kAuto,    // (ids, rows) by all-gather when that moves fewer bytes than the table
  kSparse,  // always (ids, rows)
  kDense,   // always the whole table, all-reduced
};

absl::string_view SparseReductionName(SparseReduction reduction);

class GradientReducer {
 public:
  struct Options {
    // Target size of one pack, in float32 gradient bytes (also when compressed: a
    // pack then travels as half of it); 0 chooses automatically (a quarter of all
    // gradients, between 256 KiB and 16 MiB). TensorFlow's CommunicationOptions.bytes_per_pack.
    int64_t bytes_per_pack = 0;
    // Reduce packs on a thread of their own while the backward pass goes on
    // (inter-op parallelism >= 2); off: all packs after the backward pass.
    bool overlap = true;
    // How long FinishStep may wait beyond the collectives' own deadlines.
    double finish_timeout_s = 600;
    GradientCompression compression = GradientCompression::kNone;
    // Gradients of sparse_gradient variables (embedding tables).
    SparseReduction sparse = SparseReduction::kAuto;
  };

  // `variables` in creation order; their grad pointers are set into the arena.
  GradientReducer(Communicator* comm, std::vector<Variable*> variables, Options options);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // `weight`: this replica's factor in the average, replicas x its examples / all
  // examples of the step (DistributedDataset::GradientWeightAt; 1 when every replica
  // has a full batch, 0 for an empty one, whose gradients need not be computed).
  void BeginStep(float weight = 1.f);
  // The gradient of `variable` is final for this step.
  void Ready(const Variable* variable);
  // Waits until every pack is averaged; the first error of any pack otherwise.
  absl::Status FinishStep();

  // Where the steps' communication time went since the last call (then reset).
  struct Timing {
    double communication_s = 0;  // Reducing packs (all-reduce, weighting).
    double exposed_s = 0;        // The caller blocked in FinishStep for them.
  };
  Timing TakeTiming();

  int num_packs() const { return static_cast<int>(packs_.size()); }
  // After the first step: whether every step reduces all dense gradients in one
  // all-reduce (no worker overlaps).
  bool reduces_in_one() const {
    std::lock_guard<std::mutex> lock(mu_);
    return packing_ == Packing::kWhole;
  }
  // Whether packs are reduced on a thread of their own during the backward pass.
  bool overlaps() const { return thread_.joinable(); }
  // How the last step reduced each sparse_gradient variable: true for (ids, rows).
  const std::vector<bool>& last_sparse_choice() const { return last_sparse_choice_; }
  int64_t arena_bytes() const {
    return static_cast<int64_t>(arena_.size() * sizeof(float) + wire_.size() * sizeof(BFloat16));
  }
  // "2 packs: 136 KiB [dense_2/*, dense_1/*], 803 KiB [dense/*]"
  std::string DebugString() const;

 private:
  struct Pack {
    int64_t offset = 0;  // In floats, into the arena.
    int64_t count = 0;
    int waiting = 0;  // Gradients not yet ready this step.
    int total = 0;
    std::vector<std::string> names;
  };
  int64_t WireBytesPerGradient() const {
    return options_.compression == GradientCompression::kBFloat16 ? 2 : 4;
  }
  // Whether steps reduce pack by pack or all dense gradients at once; agreed by
  // every worker's reducing thread before its first reduction.
  enum class Packing { kUnknown, kPacks, kWhole };
  absl::Status AgreeOnPacking();
  void RunPacks();
  absl::Status FinishDense();
  // `index`: the pack's, or -1 for all of them in one.
  absl::Status Reduce(const Pack& pack, int index);
  // After the packs, on the training thread: each sparse_gradient variable.
  absl::Status ReduceSparse(Variable* v, size_t index);

  Communicator* comm_;  // Not owned.
  float weight_ = 1.f;  // Set by BeginStep; read by the packs' reductions of that step.
  const Options options_;
  std::vector<float> arena_;
  // sparse_gradient variables: outside the packs, each with a buffer of its own.
  std::vector<Variable*> sparse_;
  std::vector<std::vector<float>> sparse_grads_;
  std::vector<bool> last_sparse_choice_;
  std::vector<int64_t> gathered_ids_;
  std::vector<float> gathered_rows_;
  std::vector<BFloat16> wire_;  // kBFloat16: what is being reduced, as it travels.
  std::vector<Pack> packs_;
  Pack all_packs_;  // The whole arena, as one pack (Packing::kWhole).
  std::unordered_map<const Variable*, int> pack_of_;

  mutable std::mutex mu_;
  Packing packing_ = Packing::kUnknown;  // Guarded by mu_; set once by the reducing thread.
  std::condition_variable cv_;
  int next_to_reduce_ = 0;  // Guarded by mu_: packs reduced so far this step.
  bool in_step_ = false;    // Guarded by mu_.
  bool stopping_ = false;   // Guarded by mu_.
  absl::Status error_;      // Guarded by mu_: the first error of this step.
  Timing timing_;           // Guarded by mu_.
  std::thread thread_;
};

}  // namespace ringwork

#endif  // RINGWORK_STRATEGY_GRADIENT_REDUCER_H_
