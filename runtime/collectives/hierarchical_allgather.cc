#include "runtime/collectives/hierarchical_allgather.h"

#include <vector>

#include "base/check.h"
#include "base/status_macros.h"
#include "observability/timeline.h"
#include "runtime/collectives/chunking.h"

namespace ringwork {
namespace {

// The blocks of `ranks`, in that order: the chunks of a ring over them.
std::vector<ElementRange> BlocksOf(const std::vector<int>& ranks, size_t count_per_rank) {
  std::vector<ElementRange> blocks;
  for (int r : ranks) blocks.push_back({static_cast<size_t>(r) * count_per_rank, count_per_rank});
  return blocks;
}

}  // namespace

absl::Status HierarchicalAllGather::Run(const CollectiveContext& ctx, const HostTopology& topology,
                                        uint8_t* output, size_t count_per_rank) {
  RW_CHECK(topology.uniform()) << topology.ToString();
  RW_CHECK_EQ(topology.world_size(), ctx.world_size());
  const int rank = ctx.rank();
  const int host = topology.host_of(rank);
  const int h = topology.hosts();
  const std::vector<int>& local = topology.members(host);
  const int l = static_cast<int>(local.size());
  const int i = topology.local_index(rank);

  // Phase 1, across hosts: the blocks of every rank with local index i.
  const std::vector<int> across = topology.peers_across(rank);
  if (h > 1) {
    TimelineSpan span("collective phase", "across hosts: all-gather");
    const RingGroup group{across, host, /*first_step=*/0, /*mean_divisor=*/0};
    RW_RETURN_IF_ERROR(ring_.Run(ctx, output, BlocksOf(across, count_per_rank),
                                 RingSteps(host, h, false, true, false), group));
  }
  // Phase 2, within the host, one round per host j: local rank m holds the block
  // of host j's rank with local index m since phase 1; the ring passes them round.
  if (l > 1) {
    TimelineSpan span("collective phase", "within the host: all-gather");
    for (int j = 0; j < h; ++j) {
      const RingGroup group{local, i, /*first_step=*/static_cast<uint32_t>(h + j * l),
                            /*mean_divisor=*/0};
      RW_RETURN_IF_ERROR(ring_.Run(ctx, output, BlocksOf(topology.members(j), count_per_rank),
                                   RingSteps(i, l, false, true, false), group));
    }
  }
  return absl::OkStatus();
}

}  // namespace ringwork
