// Clusters on 127.0.0.1, for `tfconfig localhost`, `launch` and tests.
//
//   absl::StatusOr<ClusterSpec> spec = LocalhostClusterSpec(/*num_workers=*/2,
//                                                           /*with_chief=*/true);
//   // chief 127.0.0.1:41233, worker 127.0.0.1:38111 and 127.0.0.1:45017
//
// Ports are found by binding port 0 and closing the socket again, so another
// process may take one in between (the same race torchrun and TF's tests accept);
// a worker that then fails to bind says so and exits 2.
#ifndef RINGWORK_RUNTIME_CONFIG_LOCALHOST_H_
#define RINGWORK_RUNTIME_CONFIG_LOCALHOST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/config/cluster_config.h"

namespace ringwork {

// `count` distinct ports that were free on `host` a moment ago.
absl::StatusOr<std::vector<int>> PickFreePorts(int count, const std::string& host = "127.0.0.1");

absl::StatusOr<ClusterSpec> LocalhostClusterSpec(int num_workers, bool with_chief,
                                                 bool with_evaluator = false);

// Every task of `spec`: ring members in rank order, then the evaluator.
std::vector<TaskId> AllTasks(const ClusterSpec& spec);

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_CONFIG_LOCALHOST_H_
