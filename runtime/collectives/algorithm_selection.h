// The one place that decides which algorithm runs a collective, from its size, the
// world size and the options. Kept separate so the decision can be tested and
// tuned (bench/allreduce_bench measures the crossover) without touching algorithms.
#ifndef RINGWORK_RUNTIME_COLLECTIVES_ALGORITHM_SELECTION_H_
#define RINGWORK_RUNTIME_COLLECTIVES_ALGORITHM_SELECTION_H_

#include <cstddef>

#include "runtime/collectives/collective_options.h"
#include "runtime/collectives/host_topology.h"

namespace ringwork {

// `bytes` is the all-reduce's size per rank; `max_frame_bytes` the smallest frame
// limit of the links (recursive doubling sends the whole buffer in one frame).
// `topology` (null: unknown) allows the hierarchical algorithm: forced, when it is
// uniform (else the ring runs); automatic, for buffers the ring would carry, with
// at least 2 hosts of at least 2 workers each. `network_links`: every rank agreed
// that all its links are network links (Communicator::network_links()).
AllReduceAlgorithm ChooseAllReduce(size_t bytes, int world_size, size_t max_frame_bytes,
                                   const CollectiveOptions& options,
                                   const HostTopology* topology = nullptr,
                                   bool network_links = false);
// The choice between the ring and recursive doubling alone.
AllReduceAlgorithm ChooseFlatAllReduce(size_t bytes, int world_size, size_t max_frame_bytes,
                                       const CollectiveOptions& options,
                                       bool network_links = false);
// In kAuto mode, all-reduces below this many bytes (that fit one frame) run by
// recursive doubling: the option for the links, grown with the world size.
size_t RecursiveDoublingBelow(int world_size, const CollectiveOptions& options, bool network_links);

enum class BroadcastShape { kBinomialTree, kChain };
BroadcastShape ChooseBroadcast(size_t bytes, int world_size, const CollectiveOptions& options);

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_COLLECTIVES_ALGORITHM_SELECTION_H_
