#include "runtime/regroup.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/deadline.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "runtime/transport/grpc/rendezvous.h"

namespace ringwork {
namespace {

std::string DescribeOriginal(const ClusterConfig& config, const std::vector<int>& original_ranks) {
  std::vector<std::string> parts;
  for (int original : original_ranks) parts.push_back(config.DescribeOriginalRank(original));
  return parts.empty() ? "none" : absl::StrJoin(parts, ", ");
}

}  // namespace

std::string DescribeDeparted(const ClusterConfig& previous, const ClusterConfig& next) {
  std::vector<int> before = previous.OriginalRanks();
  std::vector<int> after = next.OriginalRanks();
  std::sort(before.begin(), before.end());
  std::sort(after.begin(), after.end());
  std::vector<int> gone;
  std::set_difference(before.begin(), before.end(), after.begin(), after.end(),
                      std::back_inserter(gone));
  return gone.empty() ? std::string() : DescribeOriginal(previous, gone);
}

std::string DescribeArrived(const ClusterConfig& previous, const ClusterConfig& next) {
  return DescribeDeparted(next, previous);
}

namespace {

// Listen on the task's address, which the previous round's server has just left.
absl::StatusOr<std::unique_ptr<WorkerRuntime>> ListenAgain(const ClusterConfig& config,
                                                           const RuntimeOptions& options) {
  const Deadline deadline = Deadline::AfterSeconds(2);
  while (true) {
    absl::StatusOr<std::unique_ptr<WorkerRuntime>> runtime = WorkerRuntime::Listen(config, options);
    if (runtime.ok() || deadline.Expired()) return runtime;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<WorkerRuntime>> StartAgain(const ClusterConfig& config,
                                                          const RuntimeOptions& options) {
  RW_ASSIGN_OR_RETURN(std::unique_ptr<WorkerRuntime> runtime, ListenAgain(config, options));
  RW_RETURN_IF_ERROR(runtime->Connect());
  return runtime;
}

namespace {

// One round at `generation`: who is there, the quorum, and the ring of exactly them.
// `views_differ`: the ring did not form (a retry at the next generation may agree).
// `joining`: this worker is not in the running ring; it waits for its members.
// `*known`: the previous ring's configuration, to which the round adds the workers
// added to the job that it learned of (kept for the next round).
absl::StatusOr<std::unique_ptr<WorkerRuntime>> RegroupAt(ClusterConfig* known, int generation,
                                                         RuntimeOptions round,
                                                         const RegroupOptions& regroup,
                                                         bool joining, bool* views_differ) {
  *views_differ = false;
  ClusterConfig& previous = *known;
  // 1. Who is there: any worker of the roster (TF_CONFIG's ring and the workers
  // added to the job that this one knows) at this generation (not only the
  // previous members: a worker whose last round failed may look at a generation
  // from another previous ring). Workers added that it did not know call it.
  std::vector<int> everyone(static_cast<size_t>(previous.roster_size()));
  for (size_t r = 0; r < everyone.size(); ++r) everyone[r] = static_cast<int>(r);
  const ClusterConfig candidates = previous.Regrouped(everyone, generation, /*discovery=*/true);
  std::vector<int> present_original, since;
  // A worker joining is a member from this generation on.
  round.rendezvous.member_since = joining ? generation : previous.member_since();
  {
    absl::StatusOr<std::unique_ptr<WorkerRuntime>> discovery = ListenAgain(candidates, round);
    if (!discovery.ok()) {
      return absl::UnavailableError(absl::StrCat("generation ", generation,
                                                 ": cannot listen for the "
                                                 "membership round: ",
                                                 discovery.status().message()));
    }
    absl::StatusOr<WorkerRuntime::Discovered> present =
        (*discovery)
            ->Discover(regroup.discovery_s, joining ? regroup.join_wait_s : 0,
                       regroup.late_member_wait_s);
    RW_RETURN_IF_ERROR((*discovery)->Shutdown());
    if (!present.ok()) {
      return absl::UnavailableError(
          absl::StrCat("generation ", generation,
                       ": the membership round failed: ", present.status().message()));
    }
    // A round's ranks are original ranks (its members are the whole roster, in
    // order), those of workers it learned of included.
    absl::StatusOr<ClusterConfig> learned = previous.WithExtraWorkers(present->extra_workers);
    if (!learned.ok()) return absl::InvalidArgumentError(learned.status().message());
    previous = *std::move(learned);
    present_original = present->present;
    since = present->member_since;
  }
  // 2. A majority of TF_CONFIG's ring that hold the job's state (members of an
  // earlier generation; a worker joining now has none), and at least min_workers
  // in all. Joiners never make up a majority with a worker that was stopped or
  // cut off while the others trained on: its state may be older than theirs.
  const int configured = previous.configured_world_size();
  const int count = static_cast<int>(present_original.size());
  std::vector<int> holders;
  // Workers added on new hosts (extras) train, but only TF_CONFIG's ring votes:
  // two groups can never both hold a majority of it, however many were added.
  for (size_t i = 0; i < since.size(); ++i) {
    if (since[i] < generation && present_original[i] < configured) {
      holders.push_back(present_original[i]);
    }
  }
  int joining_now = 0;
  for (int since_generation : since) joining_now += since_generation >= generation ? 1 : 0;
  if (joining && count == 1) {
    return absl::UnavailableError(absl::StrCat("no member of the running job came to generation ",
                                               generation, " within ", regroup.join_wait_s, " s"));
  }
  if (2 * static_cast<int>(holders.size()) <= configured || count < regroup.min_workers) {
    return absl::UnavailableError(absl::StrCat(
        "lost the quorum: at generation ", generation, " only ", holders.size(), " of the ",
        configured, " workers of the cluster answered within ", regroup.discovery_s, " s (",
        DescribeOriginal(previous, holders), ")",
        joining_now > 0 ? absl::StrCat(", and ", joining_now, " joining without the job's state")
                        : std::string(),
        "; a group needs more than half of them",
        regroup.min_workers > 1 ? absl::StrCat(" and at least --min_workers=", regroup.min_workers)
                                : std::string(),
        " to go on, so this worker stops (a majority elsewhere may continue)"));
  }
  // 3. The ring of exactly these members.
  const ClusterConfig next = previous.Regrouped(present_original, generation, false, since);
  round.rendezvous.regroup = true;
  round.rendezvous.startup_timeout_s = regroup.connect_timeout_s;
  round.rendezvous.timeout_flag = "--regroup_timeout_s";
  absl::StatusOr<std::unique_ptr<WorkerRuntime>> runtime = ListenAgain(next, round);
  absl::Status connected = runtime.ok() ? (*runtime)->Connect() : runtime.status();
  if (!connected.ok()) {
    *views_differ = true;
    return absl::UnavailableError(absl::StrCat(
        "generation ", generation, ": the ring of ", DescribeOriginal(previous, present_original),
        " did not form (another worker saw other members, or left): ", connected.message()));
  }
  (*runtime)->EndFirstStep();  // Training is under way: the collectives' usual deadline.
  return runtime;
}

}  // namespace

absl::StatusOr<std::unique_ptr<WorkerRuntime>> Regroup(const ClusterConfig& previous,
                                                       const RuntimeOptions& options,
                                                       const RegroupOptions& regroup,
                                                       int* tried_up_to) {
  RuntimeOptions round = options;
  const int first = std::max(previous.generation() + 1, regroup.first_generation);
  round.timeline_path.clear();  // The first runtime wrote the timeline when it shut down.
  absl::Status last;
  ClusterConfig known = previous;
  // Workers whose views differed (one saw a peer the other did not) find each
  // other in the next round: by then all of them look.
  for (int attempt = 0; attempt < regroup.rounds; ++attempt) {
    bool views_differ = false;
    if (tried_up_to != nullptr) *tried_up_to = first + attempt;
    absl::StatusOr<std::unique_ptr<WorkerRuntime>> runtime =
        RegroupAt(&known, first + attempt, round, regroup, /*joining=*/false, &views_differ);
    if (runtime.ok() || !views_differ) return runtime;
    RW_LOG(WARNING) << runtime.status().message() << "; trying again";
    last = runtime.status();
  }
  return last;
}

namespace {

// A Join of TF_CONFIG's ring with asks_to_join: the generation a member answers.
absl::StatusOr<int> AskToJoin(const ClusterConfig& configured, const RuntimeOptions& options,
                              double timeout_s) {
  RuntimeOptions ask = options;
  ask.rendezvous.elastic = true;
  ask.rendezvous.asks_to_join = true;
  ask.rendezvous.startup_timeout_s = timeout_s;
  absl::StatusOr<std::unique_ptr<WorkerRuntime>> asking = ListenAgain(configured, ask);
  // Never admitted (a worker that runs no job refuses it): it ends with an answer
  // or at its deadline.
  const absl::Status answer = asking.ok() ? (*asking)->Connect() : asking.status();
  if (asking.ok()) (void)(*asking)->Shutdown();
  const int running = RunningGenerationOf(answer);
  if (running >= 0) return running;
  return absl::UnavailableError(
      absl::StrCat("no member of the job answers (it ended, or failed): ", answer.message()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<WorkerRuntime>> JoinRunningJob(const ClusterConfig& configured,
                                                              int running_generation,
                                                              const RuntimeOptions& options,
                                                              const RegroupOptions& regroup,
                                                              double timeout_s) {
  RuntimeOptions round = options;
  round.timeline_path.clear();  // Only a worker's first runtime writes the timeline.
  const Deadline deadline = Deadline::AfterSeconds(timeout_s);
  int generation = running_generation;
  ClusterConfig known = configured;  // Grows with the workers added that rounds name.
  while (true) {
    // Ask to be let in (the members count it and grow at their next step), then
    // wait for them in the next generation's membership round.
    absl::StatusOr<int> running = AskToJoin(
        known, round, std::max(2.0, std::min(regroup.join_wait_s, deadline.RemainingSeconds())));
    if (!running.ok()) {
      return absl::UnavailableError(absl::StrCat("the job this worker was to join (at generation ",
                                                 generation,
                                                 ") is gone: ", running.status().message()));
    }
    generation = *running;
    bool views_differ = false;
    absl::StatusOr<std::unique_ptr<WorkerRuntime>> runtime =
        RegroupAt(&known, generation + 1, round, regroup, /*joining=*/true, &views_differ);
    if (runtime.ok()) return runtime;
    if (deadline.Expired()) {
      return absl::UnavailableError(absl::StrCat("could not join the running job within ",
                                                 timeout_s, " s: ", runtime.status().message()));
    }
    RW_LOG(INFO) << "joining the running job: " << runtime.status().message() << "; asking again";
  }
}

}  // namespace ringwork
