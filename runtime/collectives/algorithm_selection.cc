#include "runtime/collectives/algorithm_selection.h"

#include <algorithm>

namespace ringwork {

absl::string_view AllReduceAlgorithmName(AllReduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllReduceAlgorithm::kAuto:
      return "auto";
    case AllReduceAlgorithm::kRing:
      return "ring";
    case AllReduceAlgorithm::kRecursiveDoubling:
      return "recursive_doubling";
    case AllReduceAlgorithm::kHierarchical:
      return "hierarchical";
  }
  return "?";
}

bool ParseAllReduceAlgorithm(absl::string_view text, AllReduceAlgorithm* out) {
  for (AllReduceAlgorithm a :
       {AllReduceAlgorithm::kAuto, AllReduceAlgorithm::kRing,
        AllReduceAlgorithm::kRecursiveDoubling, AllReduceAlgorithm::kHierarchical}) {
    if (text == AllReduceAlgorithmName(a)) {
      *out = a;
      return true;
    }
  }
  return false;
}

AllReduceAlgorithm ChooseAllReduce(size_t bytes, int world_size, size_t max_frame_bytes,
                                   const CollectiveOptions& options, const HostTopology* topology,
                                   bool network_links) {
  const bool can_be_hierarchical =
      topology != nullptr && topology->world_size() == world_size && topology->uniform();
  if (options.allreduce_algorithm == AllReduceAlgorithm::kHierarchical) {
    return can_be_hierarchical ? AllReduceAlgorithm::kHierarchical : AllReduceAlgorithm::kRing;
  }
  const AllReduceAlgorithm flat =
      ChooseFlatAllReduce(bytes, world_size, max_frame_bytes, options, network_links);
  // Several hosts with several workers each: the ring would cross the network
  // 2(p-1)/p times per byte through one worker per host; the hierarchical one
  // 2(H-1)/H times, spread over all of them, with the rest over shared memory.
  if (options.allreduce_algorithm == AllReduceAlgorithm::kAuto && can_be_hierarchical &&
      flat == AllReduceAlgorithm::kRing && topology->layered()) {
    return AllReduceAlgorithm::kHierarchical;
  }
  return flat;
}

size_t RecursiveDoublingBelow(int world_size, const CollectiveOptions& options,
                              bool network_links) {
  // The ring needs 2(p-1) message latencies but moves only 2(p-1)/p of the buffer
  // per rank and spreads the reduction; recursive doubling needs log2(p) latencies
  // but moves and reduces the whole buffer each round. Small buffers are latency
  // bound; over shared memory the threshold grows with p because the ring's
  // latency term does.
  if (world_size <= 1) return 0;
  const size_t p = static_cast<size_t>(world_size);
  if (!network_links) {
    size_t rounds = 0;
    for (size_t q = 1; q < p; q *= 2) ++rounds;
    return options.small_allreduce_bytes * 2 * (p - 1) / (2 * rounds);
  }
  // Over the network, with a message worth M bytes: the ring sends 2(p-1) messages
  // of n/p; recursive doubling m messages of n (log2 of the largest power of two
  // q <= p, plus 2 when p != q). They break even at
  // n = M (2(p-1) - m) p / (m p - 2(p-1)); m p <= 2(p-1) (p = 2): it always wins.
  size_t q = 1, m = 0;
  for (; q * 2 <= p; q *= 2) ++m;
  if (q != p) m += 2;
  const size_t cap = options.small_allreduce_bytes_network;
  if (m >= 2 * (p - 1)) return 0;
  if (m * p <= 2 * (p - 1)) return cap;
  return std::min(cap,
                  options.network_message_bytes * (2 * (p - 1) - m) * p / (m * p - 2 * (p - 1)));
}

AllReduceAlgorithm ChooseFlatAllReduce(size_t bytes, int world_size, size_t max_frame_bytes,
                                       const CollectiveOptions& options, bool network_links) {
  // Recursive doubling moves the whole buffer in one frame per round.
  const bool fits_one_frame = bytes <= max_frame_bytes;
  if (options.allreduce_algorithm == AllReduceAlgorithm::kRecursiveDoubling && fits_one_frame) {
    return AllReduceAlgorithm::kRecursiveDoubling;
  }
  if (options.allreduce_algorithm == AllReduceAlgorithm::kRing) {
    return AllReduceAlgorithm::kRing;
  }
  if (world_size <= 1) return AllReduceAlgorithm::kRing;
  if (bytes < RecursiveDoublingBelow(world_size, options, network_links) && fits_one_frame) {
    return AllReduceAlgorithm::kRecursiveDoubling;
  }
  return AllReduceAlgorithm::kRing;
}

BroadcastShape ChooseBroadcast(size_t bytes, int world_size, const CollectiveOptions& options) {
  if (world_size <= 2 || bytes < options.chain_broadcast_bytes) {
    return BroadcastShape::kBinomialTree;
  }
  return BroadcastShape::kChain;
}

}  // namespace ringwork
