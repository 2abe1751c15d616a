// The collectives of one group of ranks: all-reduce, broadcast, all-gather,
// reduce-scatter and barrier, each with a deadline, over any Transport.
//
//   Communicator comm(transport, CollectiveOptions());
//   std::vector<float> grads = ...;
//   RW_RETURN_IF_ERROR(comm.AllReduce(grads.data(), grads.size(),
//                                     DataType::kFloat32, ReduceOp::kMean));
//
// Rules: every rank calls the same collectives, with the same sizes and types, in
// the same order (each call gets the next sequence number, and frames of another
// sequence number or shape are refused: exit 7). One thread at a time per
// Communicator. The first error (a timeout, a peer's death, a mismatch) is sticky:
// it aborts every pending collective of the transport, and every later call fails
// at once with that same error.
#ifndef RINGWORK_RUNTIME_COLLECTIVES_COMMUNICATOR_H_
#define RINGWORK_RUNTIME_COLLECTIVES_COMMUNICATOR_H_

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "observability/timeline.h"
#include "runtime/collectives/collective_options.h"
#include "runtime/collectives/dissemination_barrier.h"
#include "runtime/collectives/hierarchical_allgather.h"
#include "runtime/collectives/hierarchical_allreduce.h"
#include "runtime/collectives/host_topology.h"
#include "runtime/collectives/pipelined_broadcast.h"
#include "runtime/collectives/progress.h"
#include "runtime/collectives/recursive_doubling_allreduce.h"
#include "runtime/collectives/ring_pipeline.h"
#include "runtime/transport/transport.h"
#include "tensor/dtype.h"
#include "tensor/reduce.h"

namespace ringwork {

class Communicator {
 public:
  // `transport` must have all its links installed, and outlive this object. The
  // progress is recorded in `progress` when given (it must outlive this object;
  // the runtime's, which its heartbeat thread reads), else in one of its own.
  Communicator(Transport* transport, CollectiveOptions options, Progress* progress = nullptr);

  int rank() const { return transport_->rank(); }
  int world_size() const { return transport_->world_size(); }
  const CollectiveOptions& options() const { return options_; }

  // Changes the deadline of the collectives started from now on, and the flag that
  // timeout messages name (the runtime starts with the first-step timeout and
  // switches to the steady-state one). Thread-safe.
  void SetTimeout(double seconds, std::string flag);

  // In place: `data` holds `count` elements on every rank; afterwards each holds
  // the element-wise reduction over all ranks (kMean: divided by world size).
  absl::Status AllReduce(void* data, size_t count, DataType dtype, ReduceOp op);
  // `data` (`count` elements) of rank `root` is copied to every rank's `data`.
  absl::Status Broadcast(void* data, size_t count, DataType dtype, int root);
  // `output` (world_size * count elements) receives every rank's `input` (count
  // elements), in rank order. `input` may be `output + rank * count`.
  absl::Status AllGather(const void* input, void* output, size_t count, DataType dtype);
  // `input` holds world_size * count elements; `output` (count elements) receives
  // the reduction of block `rank` over all ranks.
  absl::Status ReduceScatter(const void* input, void* output, size_t count, DataType dtype,
                             ReduceOp op);
  // Returns when every rank has called Barrier.
  absl::Status Barrier();

  template <typename T>
  absl::Status AllReduce(absl::Span<T> data, ReduceOp op) {
    return AllReduce(data.data(), data.size(), DataTypeOf<T>::value, op);
  }
  template <typename T>
  absl::Status Broadcast(absl::Span<T> data, int root) {
    return Broadcast(data.data(), data.size(), DataTypeOf<T>::value, root);
  }

  // OK, or the first error of this communicator's transport.
  absl::Status status() const { return transport_->status(); }
  // How many collectives were started (the next sequence number).
  uint64_t collectives_started() const { return progress_->started(); }
  // This worker's step and collectives, for heartbeats and stall reports.
  Progress& progress() { return *progress_; }
  const Progress& progress() const { return *progress_; }
  // The algorithm the last all-reduce used, for benchmarks and tests.
  AllReduceAlgorithm last_allreduce_algorithm() const { return last_allreduce_; }
  // Whether the last AllGather ran across hosts first (hierarchical_allgather.h):
  // on 2+ hosts of equally many workers, 2+ each, unless --allreduce_algorithm
  // forces a flat one (ring, recursive_doubling).
  bool last_allgather_hierarchical() const { return last_allgather_hierarchical_; }
  // The segment size of pipelined collectives on this rank.
  size_t segment_bytes() const { return segment_bytes_; }
  // A collective that makes every rank use the smallest segment size of all of
  // them (ranks with different kinds of links prefer different sizes, and all must
  // cut data the same way). Called once by every rank, before other collectives.
  absl::Status AgreeOnSegmentBytes();
  // A collective that tells every rank which ranks share a host: the ranks this
  // one reaches over shared memory (links of kind "shm"). Every rank ends with the
  // same topology; views that disagree (a rank whose shared-memory peers are not
  // each other's) leave every rank on its own host. Until it ran, each rank is on
  // its own host (the hierarchical all-reduce is never chosen).
  absl::Status LearnTopology();
  const HostTopology& topology() const { return topology_; }
  // Whether every rank agreed (LearnTopology) that all its links are network
  // links (gRPC, no shared memory): all-reduces then use recursive doubling up to
  // CollectiveOptions::small_allreduce_bytes_network. False until then.
  bool network_links() const { return network_links_; }
  // Sets the topology instead (tests that emulate hosts over in-memory links).
  // Every rank must set the same one, before the collectives that use it.
  void set_topology(HostTopology topology) { topology_ = std::move(topology); }

 private:
  using Body = std::function<absl::Status(const CollectiveContext&)>;
  absl::Status Run(const CollectiveInfo& info, const Body& body);
  // Run's body with the timeline's span: what, how, over which links, and which
  // peer it waited for longest.
  absl::Status RunRecorded(Timeline* timeline, const CollectiveInfo& info, uint64_t seq,
                           const Body& body, const CollectiveContext& ctx);
  // "shm", "grpc", "shm+grpc": the kinds of this rank's links.
  const std::string& LinkKinds();
  size_t SegmentElems(DataType dtype) const;

  Transport* transport_;  // Not owned.
  const CollectiveOptions options_;
  size_t max_frame_bytes_;
  size_t segment_bytes_;
  uint64_t next_seq_ = 0;
  bool network_links_ = false;
  Progress own_progress_;
  Progress* progress_;
  std::mutex timeout_mu_;
  double timeout_s_;          // Guarded by timeout_mu_.
  std::string timeout_flag_;  // Guarded by timeout_mu_.
  AllReduceAlgorithm last_allreduce_ = AllReduceAlgorithm::kAuto;
  RingPipeline ring_;
  RecursiveDoublingAllReduce doubling_;
  HierarchicalAllReduce hierarchical_;
  HierarchicalAllGather hierarchical_gather_;
  bool last_allgather_hierarchical_ = false;
  HostTopology topology_;
  PipelinedBroadcast broadcast_;
  DisseminationBarrier barrier_;
  std::vector<uint8_t> scratch_;
  std::string link_kinds_;  // LinkKinds(), once known.
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_COLLECTIVES_COMMUNICATOR_H_
