// A cluster description from the environment Slurm's srun gives each task, as
// TensorFlow's SlurmClusterResolver builds it: every task is a "worker" (worker 0 is
// the chief); task i on a node listens on base_port + (its index among that node's
// tasks); ranks follow SLURM_PROCID with Slurm's default block distribution.
//
//   SLURM_PROCID=3 SLURM_NTASKS=4 SLURM_STEP_NODELIST='node[01-02]'
//   SLURM_STEP_TASKS_PER_NODE='2(x2)'
//   absl::StatusOr<ClusterConfig> c = ClusterFromSlurm(EnvFromProcess(), 8470);
//   // worker:3 at node02:8471
#ifndef RINGWORK_RUNTIME_CONFIG_SLURM_H_
#define RINGWORK_RUNTIME_CONFIG_SLURM_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/config/cluster_config.h"

namespace ringwork {

// Looks up an environment variable; nullopt when unset. Tests pass a map.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup EnvFromProcess();

// Expands a Slurm hostlist: "node[01-04,07],gpu1,rack[1-2]-n[1-2]" ->
// node01 node02 node03 node04 node07 gpu1 rack1-n1 rack1-n2 rack2-n1 rack2-n2.
// Zero padding follows the range's lower bound, as in Slurm.
absl::StatusOr<std::vector<std::string>> ExpandHostlist(absl::string_view hostlist);

// Expands SLURM_TASKS_PER_NODE's compressed form: "2(x3),1" -> 2 2 2 1.
absl::StatusOr<std::vector<int>> ExpandTasksPerNode(absl::string_view text);

// True when the environment says this process was started by srun as one of
// several tasks of a step.
bool LooksLikeSlurmStep(const EnvLookup& env);

absl::StatusOr<ClusterConfig> ClusterFromSlurm(const EnvLookup& env, int base_port);

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_CONFIG_SLURM_H_
