// WorkerRuntime's membership round for elastic training (runtime/regroup.h): the
// rendezvous of the task's server without links, reporting who answered.
#include <algorithm>

#include "runtime/transport/grpc/rendezvous.h"
#include "runtime/worker_runtime.h"

namespace ringwork {

absl::StatusOr<WorkerRuntime::Discovered> WorkerRuntime::Discover(double seconds,
                                                                  double first_contact_wait_s,
                                                                  double late_member_wait_s) {
  Discovered found;
  if (config_.world_size() == 1) {
    found.present = {config_.rank()};
    found.member_since = {options_.rendezvous.member_since};
    return found;
  }
  RendezvousOptions discovery = options_.rendezvous;
  discovery.regroup = true;
  discovery.discovery = true;
  discovery.startup_timeout_s = seconds;
  discovery.first_contact_wait_s = first_contact_wait_s;
  discovery.late_member_wait_s = late_member_wait_s;
  discovery.attempt_timeout_s = std::min(discovery.attempt_timeout_s, seconds);
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  absl::StatusOr<std::vector<JoinedPeer>> peers = RunJoins(discovery, &channels);
  // No Join is admitted after this: a peer counts this worker exactly when this
  // worker counts it (the call that told one told both), lost answers aside.
  inbound_joins_->Seal();
  // Nothing more travels in this round: its shutdown waits for nobody.
  transport_->Abort(absl::CancelledError("the membership round is over"));
  if (!peers.ok()) return peers.status();
  // Past the roster: workers added to the job that called (their Joins named them).
  const int known = std::max(config_.world_size(), inbound_joins_->size());
  for (int peer = 0; peer < known; ++peer) {
    const bool answered = peer < config_.world_size() && (*peers)[peer].present;
    if (peer == config_.rank()) {
      found.present.push_back(peer);
      found.member_since.push_back(options_.rendezvous.member_since);
    } else if (answered || inbound_joins_->joined(peer)) {
      found.present.push_back(peer);
      // Its Join may have come after the rendezvous ended, before the seal.
      found.member_since.push_back(answered ? (*peers)[peer].member_since
                                            : inbound_joins_->member_since(peer));
    }
  }
  found.extra_workers = known_extra_workers();
  return found;
}

}  // namespace ringwork
