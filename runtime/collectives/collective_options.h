// Settings of the collectives. Every worker must use the same values: frames carry
// their step and segment, and a worker whose settings split the data differently is
// refused with a mismatch error (exit 7).
#ifndef RINGWORK_RUNTIME_COLLECTIVES_COLLECTIVE_OPTIONS_H_
#define RINGWORK_RUNTIME_COLLECTIVES_COLLECTIVE_OPTIONS_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace ringwork {

enum class AllReduceAlgorithm {
  kAuto,               // Chosen by size and world size (algorithm_selection.h).
  kRing,               // Bandwidth-optimal: reduce-scatter then all-gather.
  kRecursiveDoubling,  // Latency-optimal: log2(p) full exchanges.
  // Within hosts over shared memory, across hosts in one ring per local index
  // (hierarchical_allreduce.h); needs the same number of workers on every host.
  kHierarchical,
};
absl::string_view AllReduceAlgorithmName(AllReduceAlgorithm algorithm);
bool ParseAllReduceAlgorithm(absl::string_view text, AllReduceAlgorithm* out);

struct CollectiveOptions {
  // Deadline of one collective, from its start. Flag --collective_timeout_s, env
  // RINGWORK_COLLECTIVE_TIMEOUT_S. When it passes, the collective fails with exit
  // code 4 and every later collective fails at once with the same error.
  double timeout_s = 300;
  // Largest piece of data sent in one frame by the pipelined algorithms; smaller
  // pieces overlap sending, receiving and reducing better, larger ones cost fewer
  // messages. 0: the links' preferred size (256 KiB over shared memory, 1 MiB over
  // gRPC). Always capped by each link's maximum frame.
  size_t segment_bytes = 0;
  // All-reduces smaller than this (in bytes per rank) use recursive doubling in
  // kAuto mode; larger ones use the ring.
  size_t small_allreduce_bytes = 64 << 10;
  // When every link of every rank is a network link (gRPC) a message costs about
  // 30 us against 1-2 us over shared memory, so recursive doubling's fewer
  // messages win up to larger buffers (2 ranks over loopback gRPC, ring against
  // recursive doubling: 64 KiB 78 / 64 us, 256 KiB 157 / 123 us, 1 MiB 334 / 300
  // us, 4 MiB 1186 / 1643 us; docs/PERFORMANCE.md). Its whole-buffer messages cost
  // bandwidth, though, the more so with a world size that is no power of two (two
  // more of them). The threshold is where the two break even if one message costs
  // as much as sending `network_message_bytes` (30 us at 4 GB/s), at most
  // `small_allreduce_bytes_network`: 1 MiB at 2, 4, 8, 16 ranks; 77 KiB at 3;
  // 213 KiB at 5; 448 KiB at 7 (algorithm_selection.cc).
  size_t small_allreduce_bytes_network = 1 << 20;
  size_t network_message_bytes = 128 << 10;
  // Broadcasts at least this large use a pipelined chain; smaller ones a binomial
  // tree.
  size_t chain_broadcast_bytes = 256 << 10;
  AllReduceAlgorithm allreduce_algorithm = AllReduceAlgorithm::kAuto;
  // Named in timeout messages, so users know which knob to turn.
  std::string timeout_flag = "--collective_timeout_s (env RINGWORK_COLLECTIVE_TIMEOUT_S)";
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_COLLECTIVES_COLLECTIVE_OPTIONS_H_
