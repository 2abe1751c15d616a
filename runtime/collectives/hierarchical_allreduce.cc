#include "runtime/collectives/hierarchical_allreduce.h"

#include <optional>

#include "base/check.h"
#include "base/status_macros.h"
#include "observability/timeline.h"
#include "runtime/collectives/chunking.h"

namespace ringwork {

absl::Status HierarchicalAllReduce::Run(const CollectiveContext& ctx, const HostTopology& topology,
                                        uint8_t* buffer, size_t count, bool mean) {
  RW_CHECK(topology.uniform()) << topology.ToString();
  RW_CHECK_EQ(topology.world_size(), ctx.world_size());
  const int rank = ctx.rank();
  const int p = ctx.world_size();
  const std::vector<int>& local = topology.members(topology.host_of(rank));
  const int l = static_cast<int>(local.size());
  const int i = topology.local_index(rank);
  const int h = topology.hosts();

  // Phase 1, within the host: local rank i ends with the host's sum of chunk i.
  const std::vector<ElementRange> local_chunks = BalancedChunks(count, l);
  // Each phase is a span of its own ("collective phase"), so a timeline shows which
  // one a slow hierarchical all-reduce spent its time in.
  RingGroup within{local, i, /*first_step=*/0, /*mean_divisor=*/0};
  {
    std::optional<TimelineSpan> span;
    if (l > 1) span.emplace("collective phase", "within the host: reduce-scatter");
    RW_RETURN_IF_ERROR(
        ring_.Run(ctx, buffer, local_chunks, RingSteps(i, l, true, false, false), within));
  }

  // Phase 2, across hosts: chunk i all-reduced by the ranks with local index i.
  const ElementRange mine = local_chunks[i];
  std::vector<ElementRange> across_chunks = BalancedChunks(mine.count, h);
  for (ElementRange& c : across_chunks) c.offset += mine.offset;
  const RingGroup across{topology.peers_across(rank), topology.host_of(rank),
                         /*first_step=*/static_cast<uint32_t>(2 * l), /*mean_divisor=*/p};
  if (h > 1) {
    TimelineSpan span("collective phase", "across hosts: all-reduce");
    if (span.active()) span.Arg("bytes", static_cast<int64_t>(mine.count * ctx.element_bytes()));
    RW_RETURN_IF_ERROR(ring_.Run(ctx, buffer, across_chunks,
                                 RingSteps(topology.host_of(rank), h, true, true, mean), across));
  } else if (mean) {
    FinishMean(ctx.info.dtype, buffer + mine.offset * ctx.element_bytes(), mine.count, p);
  }

  // Phase 3, within the host: every local rank gets every chunk.
  within.first_step = static_cast<uint32_t>(l);
  std::optional<TimelineSpan> span;
  if (l > 1) span.emplace("collective phase", "within the host: all-gather");
  return ring_.Run(ctx, buffer, local_chunks, RingSteps(i, l, false, true, false), within);
}

}  // namespace ringwork
