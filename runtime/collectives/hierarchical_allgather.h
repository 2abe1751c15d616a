// All-gather across hosts with several ranks each: the ranks with local index i on
// every host all-gather their blocks over the network in a ring of their own (H-1
// network steps instead of the flat ring's p-1, and every local rank carrying its
// share of a host's traffic rather than the one rank at the ring's host boundary);
// then, over shared memory, each host's ranks pass on what they gathered, one
// round per host (H(L-1) steps, each costing a shared-memory hop, not a network
// one). The output is in rank order, as the flat all-gather's.
//
//   HierarchicalAllGather gather;
//   RW_RETURN_IF_ERROR(gather.Run(ctx, topology, output, count_per_rank));
//
// `output` holds p blocks of `count_per_rank` elements with this rank's block
// already in place. Requires a uniform topology (the same number of ranks on
// every host). Copies only: every rank ends with the same bits.
#ifndef RINGWORK_RUNTIME_COLLECTIVES_HIERARCHICAL_ALLGATHER_H_
#define RINGWORK_RUNTIME_COLLECTIVES_HIERARCHICAL_ALLGATHER_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "runtime/collectives/collective_context.h"
#include "runtime/collectives/host_topology.h"
#include "runtime/collectives/ring_pipeline.h"

namespace ringwork {

class HierarchicalAllGather {
 public:
  absl::Status Run(const CollectiveContext& ctx, const HostTopology& topology, uint8_t* output,
                   size_t count_per_rank);

 private:
  RingPipeline ring_;
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_COLLECTIVES_HIERARCHICAL_ALLGATHER_H_
