// All-reduce across hosts with several ranks each (Horovod's hierarchical
// all-reduce, NCCL's rings across nodes): the ranks of a host reduce-scatter the
// buffer among themselves over shared memory, so that local rank i holds the host's
// sum of chunk i; the ranks with local index i on every host all-reduce chunk i over
// the network in a ring of their own (every local rank carries its share of the
// bytes, so all of a host's network links are busy at once); then each host
// all-gathers the chunks. Each byte crosses the network 2(H-1)/H times per host
// instead of 2(p-1)/p times per rank.
//
//   HierarchicalAllReduce hierarchical;
//   RW_RETURN_IF_ERROR(hierarchical.Run(ctx, topology, buffer, count, /*mean=*/true));
//
// Every rank ends with the same bits: each chunk's final value is formed by one
// rank and copied to the others. Requires a uniform topology (the same number of
// ranks on every host).
#ifndef RINGWORK_RUNTIME_COLLECTIVES_HIERARCHICAL_ALLREDUCE_H_
#define RINGWORK_RUNTIME_COLLECTIVES_HIERARCHICAL_ALLREDUCE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/collectives/collective_context.h"
#include "runtime/collectives/host_topology.h"
#include "runtime/collectives/ring_pipeline.h"

namespace ringwork {

class HierarchicalAllReduce {
 public:
  absl::Status Run(const CollectiveContext& ctx, const HostTopology& topology, uint8_t* buffer,
                   size_t count, bool mean);

 private:
  RingPipeline ring_;
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_COLLECTIVES_HIERARCHICAL_ALLREDUCE_H_
