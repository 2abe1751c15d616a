// Elastic training's membership change: after a peer failed, the workers still
// running form the next generation of the ring among themselves, or learn that
// they are a minority and must stop.
//
//   // `failed` was the old runtime's; shut it down first (it frees the port).
//   RW_RETURN_IF_ERROR(old_runtime->Shutdown());
//   absl::StatusOr<std::unique_ptr<WorkerRuntime>> next =
//       Regroup(old_config, options, RegroupOptions{.min_workers = 2});
//   // next: connected, ranks 0..k-1 over the survivors (the lowest is the chief).
//
// Two rounds, each a rendezvous on the task's own TF_CONFIG address:
//  1. Discovery (generation g+1, every worker of TF_CONFIG's ring, marked
//     "discovery" in the fingerprint): each worker Joins every other one for
//     `discovery_s`, or until all answered. The members are this worker and
//     every peer that answered one of its Joins or called it: a dead, stopped or
//     cut-off peer does neither. A peer whose server answers that it is still in
//     the previous ring (busy there: a slow step, a checkpoint write) is awaited
//     past the window, up to `late_member_wait_s`.
//  2. Quorum: the members must be more than half of TF_CONFIG's ring and at least
//     `min_workers`; otherwise UNAVAILABLE (exit 3), "lost the quorum". Two
//     groups can never both hold more than half, so the job never splits.
//  3. The new ring (generation g+1, exactly those members, in its fingerprint):
//     a strict rendezvous within `connect_timeout_s`. Workers whose views of the
//     membership differ have different fingerprints and never connect: they try
//     again from 1 at the next generation (`rounds` in all, then exit 3). A
//     worker of an older generation (one that was stopped while the others moved
//     on) is refused by every newer one, so it finds no quorum.
#ifndef RINGWORK_RUNTIME_REGROUP_H_
#define RINGWORK_RUNTIME_REGROUP_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/config/cluster_config.h"
#include "runtime/runtime_options.h"
#include "runtime/worker_runtime.h"

namespace ringwork {

struct RegroupOptions {
  int min_workers = 1;           // Besides a majority of TF_CONFIG's ring.
  double discovery_s = 1.0;      // Survivors' failure detections are this close.
  double connect_timeout_s = 5;  // The new ring's rendezvous.
  // Rounds (each one generation more) while the survivors' views differ.
  int rounds = 3;
  // JoinRunningJob: how long a joining worker waits in a discovery round for the
  // members to come (they come at their next step boundary) before it asks again.
  double join_wait_s = 10;
  // A membership round waits past `discovery_s` for workers still busy in the
  // previous ring (a slow step or checkpoint write: their server answers), up to
  // this long from its start (RendezvousOptions::late_member_wait_s).
  double late_member_wait_s = 10;
  // The first generation to try: the previous ring's + 1, or later (a worker
  // whose earlier regroup failed after trying generations never uses one again).
  int first_generation = 0;
};

// The next generation's runtime, connected; `previous` is the failed ring's
// configuration. UNAVAILABLE (exit 3) for a lost quorum or a failed regroup.
// `*tried_up_to` (if set): the highest generation it tried, failed or not.
absl::StatusOr<std::unique_ptr<WorkerRuntime>> Regroup(const ClusterConfig& previous,
                                                       const RuntimeOptions& options,
                                                       const RegroupOptions& regroup,
                                                       int* tried_up_to = nullptr);

// A worker starting (again) while its job runs elastically (its first rendezvous
// ended in JobRunningError: a member ran `running_generation`): it asks to join
// (a Join of TF_CONFIG's ring with asks_to_join, which the members count and
// answer with their generation g), then waits in generation g+1's membership
// round until they come, which they do at their next step boundary, and returns
// the ring it joined them in (itself last: RendezvousOptions::member_since). It
// asks again whenever that round fails. UNAVAILABLE (exit 3) when no member
// answers any more (the job ended) or after `timeout_s`.
absl::StatusOr<std::unique_ptr<WorkerRuntime>> JoinRunningJob(const ClusterConfig& configured,
                                                              int running_generation,
                                                              const RuntimeOptions& options,
                                                              const RegroupOptions& regroup,
                                                              double timeout_s);

// WorkerRuntime::Start on the task's address, which a runtime has just left
// (retried for 2 s while the port is still taken).
absl::StatusOr<std::unique_ptr<WorkerRuntime>> StartAgain(const ClusterConfig& config,
                                                          const RuntimeOptions& options);

// "worker:2 (h:p), worker:3 (h:p)": the tasks of `previous` that `next` lacks
// ("" when none).
std::string DescribeDeparted(const ClusterConfig& previous, const ClusterConfig& next);
// The tasks of `next` that `previous` lacks (workers that joined).
std::string DescribeArrived(const ClusterConfig& previous, const ClusterConfig& next);

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_REGROUP_H_
