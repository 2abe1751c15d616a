// Checks that every worker describes something (its model, its settings) the same
// way, before they train together, and says where they differ.
//
//   std::vector<std::string> lines = {"variable dense/kernel: float32 [784, 256]", ...};
//   RW_RETURN_IF_ERROR(CheckSameOnEveryWorker(comm, cluster, "model", lines));
//
// Cheap when they agree: one 16-byte all-reduce of a hash. When they do not, the
// descriptions are gathered and each worker reports the first line where it
// differs from the chief (the chief: from the first worker that differs), showing
// both sides, as a mismatch error (exit 7). Every worker must call it.
#ifndef RINGWORK_STRATEGY_AGREEMENT_H_
#define RINGWORK_STRATEGY_AGREEMENT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "runtime/collectives/communicator.h"
#include "runtime/config/cluster_config.h"

namespace ringwork {

absl::Status CheckSameOnEveryWorker(Communicator* comm, const ClusterConfig& cluster,
                                    absl::string_view what, const std::vector<std::string>& lines);

}  // namespace ringwork

#endif  // RINGWORK_STRATEGY_AGREEMENT_H_
