#include "runtime/regroup.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"
#include "base/status_macros.h"

namespace ringwork {
namespace {

std::string DescribeOriginal(const ClusterConfig& config, const std::vector<int>& original_ranks) {
  std::vector<std::string> parts;
  for (int original : original_ranks) parts.push_back(config.DescribeOriginalRank(original));
  return parts.empty() ? "none" : absl::StrJoin(parts, ", ");
}

}  // namespace

std::string DescribeDeparted(const ClusterConfig& previous, const ClusterConfig& next) {
  const std::vector<int> before = previous.OriginalRanks();
  const std::vector<int> after = next.OriginalRanks();
  std::vector<int> gone;
  std::set_difference(before.begin(), before.end(), after.begin(), after.end(),
                      std::back_inserter(gone));
  return DescribeOriginal(previous, gone);
}

absl::StatusOr<std::unique_ptr<WorkerRuntime>> Regroup(const ClusterConfig& previous,
                                                       const RuntimeOptions& options,
                                                       const RegroupOptions& regroup) {
  const int generation = previous.generation() + 1;
  RuntimeOptions round = options;
  round.timeline_path.clear();  // The first runtime wrote the timeline when it shut down.
  // 1. Who is there.
  const ClusterConfig candidates = previous.Regrouped(previous.OriginalRanks(), generation,
                                                      /*discovery=*/true);
  std::vector<int> present_original;
  {
    RW_ASSIGN_OR_RETURN(std::unique_ptr<WorkerRuntime> discovery,
                        WorkerRuntime::Listen(candidates, round));
    absl::StatusOr<std::vector<int>> present = discovery->Discover(regroup.discovery_s);
    RW_RETURN_IF_ERROR(discovery->Shutdown());
    if (!present.ok()) {
      return absl::UnavailableError(absl::StrCat("generation ", generation,
                                                 ": the membership round failed: ",
                                                 present.status().message()));
    }
    const std::vector<int> originals = candidates.OriginalRanks();
    for (int r : *present) present_original.push_back(originals[static_cast<size_t>(r)]);
  }
  // 2. A majority of TF_CONFIG's ring, and at least min_workers.
  const int configured = previous.configured_world_size();
  const int count = static_cast<int>(present_original.size());
  if (2 * count <= configured || count < regroup.min_workers) {
    return absl::UnavailableError(absl::StrCat(
        "lost the quorum: at generation ", generation, " only ", count, " of the ", configured,
        " workers of the cluster answered within ", regroup.discovery_s, " s (",
        DescribeOriginal(previous, present_original), "); a group needs more than half of them",
        regroup.min_workers > 1 ? absl::StrCat(" and at least --min_workers=", regroup.min_workers)
                                : std::string(),
        " to go on, so this worker stops (a majority elsewhere may continue)"));
  }
  // 3. The ring of exactly these members.
  const ClusterConfig next = previous.Regrouped(present_original, generation);
  round.rendezvous.regroup = true;
  round.rendezvous.startup_timeout_s = regroup.connect_timeout_s;
  round.rendezvous.timeout_flag = "the regroup's connect timeout";
  absl::StatusOr<std::unique_ptr<WorkerRuntime>> runtime = WorkerRuntime::Start(next, round);
  if (!runtime.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "generation ", generation, ": the survivors (", DescribeOriginal(previous, present_original),
        ") did not agree on the membership or could not connect: ", runtime.status().message()));
  }
  (*runtime)->EndFirstStep();  // Training is under way: the collectives' usual deadline.
  return runtime;
}

}  // namespace ringwork
