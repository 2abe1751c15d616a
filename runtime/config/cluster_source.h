// Where a binary's cluster description comes from.
//
//   FlagSet flags("my_app: trains on a cluster");
//   ClusterSourceFlags source;
//   source.Register(&flags);
//   // flags.Parse(argc, argv), then:
//   absl::StatusOr<ClusterConfig> config = ResolveCluster(source, EnvFromProcess());
//
// In order of precedence:
// 1. --tf_config=JSON or --tf_config_file=PATH (explicit; overrides the environment)
// 2. the TF_CONFIG environment variable
// 3. Slurm's srun environment (SLURM_PROCID, SLURM_NTASKS, SLURM_STEP_NODELIST)
// 4. nothing: single-worker local mode, with one log line saying so.
// --cluster_from=tf_config|slurm|local forces one source instead of that order.
// RINGWORK_VOTING_WORKERS=N (set by `launch --host_discovery` for a worker it adds
// on a new host) makes only the first N workers the voting ring; the task and any
// worker after them are extras (runtime/config/cluster_config.h).
#ifndef RINGWORK_RUNTIME_CONFIG_CLUSTER_SOURCE_H_
#define RINGWORK_RUNTIME_CONFIG_CLUSTER_SOURCE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "base/flags.h"
#include "runtime/config/cluster_config.h"
#include "runtime/config/slurm.h"

namespace ringwork {

struct ClusterSourceFlags {
  std::string tf_config;              // --tf_config: the TF_CONFIG JSON itself.
  std::string tf_config_file;         // --tf_config_file: a file holding it.
  std::string cluster_from = "auto";  // --cluster_from: auto|tf_config|slurm|local.
  int64_t slurm_base_port = 8470;     // --slurm_base_port: first port on each node.

  void Register(FlagSet* flags);
};

absl::StatusOr<ClusterConfig> ResolveCluster(const ClusterSourceFlags& flags, const EnvLookup& env);

// The cluster this process resolved for itself with the flags it parsed (the
// strategy's Create and ResolveThisTask record it); nullopt before that.
std::optional<ClusterConfig> ThisProcessCluster();
void SetThisProcessCluster(std::optional<ClusterConfig> config);

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_CONFIG_CLUSTER_SOURCE_H_
