// Are the replicas still identical? Every worker hashes its copy of each variable
// (FNV-1a over the float bits) and one MIN all-reduce of (hash, ~hash) per variable
// gives each hash's smallest and largest value over the workers: equal everywhere,
// or the replicas have drifted apart (a host that computes differently, memory
// corruption, a bug), which ends the job instead of training apart silently.
//
//   RW_RETURN_IF_ERROR(CheckReplicasIdentical(strategy, model.weights(), "step 500"));
//
// Collective: every worker calls it at the same point. FAILED_PRECONDITION (exit 7)
// naming the first differing variable and `when`.
#ifndef RINGWORK_STRATEGY_REPLICA_CHECK_H_
#define RINGWORK_STRATEGY_REPLICA_CHECK_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "strategy/multi_worker_mirrored_strategy.h"
#include "strategy/variable.h"

namespace ringwork {

absl::Status CheckReplicasIdentical(MultiWorkerMirroredStrategy* strategy,
                                    const std::vector<Variable*>& variables,
                                    absl::string_view when);

}  // namespace ringwork

#endif  // RINGWORK_STRATEGY_REPLICA_CHECK_H_
