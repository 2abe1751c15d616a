#include "runtime/config/cluster_source.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "runtime/config/tf_config.h"

namespace ringwork {
namespace {

// Adds where the configuration came from to an error's message, keeping its code.
absl::Status InSource(const absl::Status& status, absl::string_view source) {
  return absl::Status(status.code(), absl::StrCat("in ", source, ": ", status.message()));
}

absl::StatusOr<std::string> ReadConfigFile(const std::string& path) {
  const std::string flag = absl::StrCat("--tf_config_file=", path);
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) {
    return absl::NotFoundError(
        absl::StrCat(flag, ": cannot read the file: ", std::strerror(errno)));
  }
  if (!S_ISREG(info.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": not a regular file"));
  }
  if (static_cast<size_t>(info.st_size) > kMaxTfConfigBytes) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": the file is ", info.st_size,
                                                   " bytes; the limit is ", kMaxTfConfigBytes,
                                                   " bytes"));
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in.good() && !in.eof()) {
    return absl::NotFoundError(absl::StrCat(flag, ": cannot read the file"));
  }
  return text.str();
}

absl::StatusOr<ClusterConfig> FromTfConfigEnv(const EnvLookup& env, bool required) {
  std::optional<std::string> text = env("TF_CONFIG");
  if (!text || text->empty()) {
    if (required) {
      return absl::InvalidArgumentError(
          "--cluster_from=tf_config, but the TF_CONFIG environment variable is not set");
    }
    RW_LOG(INFO) << "no TF_CONFIG: running in single-worker local mode";
    return ClusterConfig::Local("local (no TF_CONFIG)");
  }
  return ParseTfConfig(*text, "TF_CONFIG");
}

}  // namespace

void ClusterSourceFlags::Register(FlagSet* flags) {
  flags->String("tf_config", &tf_config,
                "the TF_CONFIG JSON; overrides the TF_CONFIG environment variable");
  flags->String("tf_config_file", &tf_config_file,
                "a file holding the TF_CONFIG JSON; overrides the environment");
  flags->String("cluster_from", &cluster_from,
                "auto (flags, then TF_CONFIG, then Slurm, then local), tf_config, "
                "slurm or local",
                "RINGWORK_CLUSTER_FROM");
  flags->Int("slurm_base_port", &slurm_base_port,
             "with Slurm, task i on a node listens on this port + i", "RINGWORK_SLURM_BASE_PORT");
}

namespace {

absl::StatusOr<ClusterConfig> ResolveClusterSource(const ClusterSourceFlags& flags,
                                                   const EnvLookup& env) {
  if (!flags.tf_config.empty() && !flags.tf_config_file.empty()) {
    return absl::InvalidArgumentError("give --tf_config or --tf_config_file, not both");
  }
  if (!flags.tf_config.empty()) {
    absl::StatusOr<ClusterConfig> config = ParseTfConfig(flags.tf_config, "--tf_config");
    if (!config.ok()) return InSource(config.status(), "--tf_config");
    return config;
  }
  if (!flags.tf_config_file.empty()) {
    RW_ASSIGN_OR_RETURN(std::string text, ReadConfigFile(flags.tf_config_file));
    const std::string source = absl::StrCat("--tf_config_file=", flags.tf_config_file);
    absl::StatusOr<ClusterConfig> config = ParseTfConfig(text, source);
    if (!config.ok()) return InSource(config.status(), source);
    return config;
  }
  const std::string& from = flags.cluster_from;
  if (from == "tf_config") return FromTfConfigEnv(env, /*required=*/true);
  if (from == "slurm") {
    return ClusterFromSlurm(env, static_cast<int>(flags.slurm_base_port));
  }
  if (from == "local") return ClusterConfig::Local("local (--cluster_from=local)");
  if (from != "auto") {
    return absl::InvalidArgumentError(
        absl::StrCat("--cluster_from=", from, ": expected auto, tf_config, slurm or local"));
  }
  std::optional<std::string> tf_config = env("TF_CONFIG");
  if (tf_config && !tf_config->empty()) return ParseTfConfig(*tf_config, "TF_CONFIG");
  if (LooksLikeSlurmStep(env)) {
    RW_LOG(INFO) << "no TF_CONFIG; using the Slurm step's environment";
    return ClusterFromSlurm(env, static_cast<int>(flags.slurm_base_port));
  }
  return FromTfConfigEnv(env, /*required=*/false);
}

}  // namespace

absl::StatusOr<ClusterConfig> ResolveCluster(const ClusterSourceFlags& flags,
                                             const EnvLookup& env) {
  RW_ASSIGN_OR_RETURN(ClusterConfig config, ResolveClusterSource(flags, env));
  // A worker launch started on a host that appeared (launch --host_discovery):
  // the first N workers of its cluster are the job's voting ring, the rest extras.
  std::optional<std::string> voting = env("RINGWORK_VOTING_WORKERS");
  if (!voting || voting->empty() || config.local_mode()) return config;
  int workers = -1;
  if (!absl::SimpleAtoi(*voting, &workers)) {
    return absl::InvalidArgumentError(
        absl::StrCat("RINGWORK_VOTING_WORKERS=", *voting, ": expected a number of workers"));
  }
  RW_RETURN_IF_ERROR(config.SetVotingWorkers(workers));
  return config;
}

namespace {

absl::Mutex this_process_mu(absl::kConstInit);
std::optional<ClusterConfig>* this_process_cluster = nullptr;  // Guarded by this_process_mu.

}  // namespace

std::optional<ClusterConfig> ThisProcessCluster() {
  absl::MutexLock lock(&this_process_mu);
  return this_process_cluster == nullptr ? std::nullopt : *this_process_cluster;
}

void SetThisProcessCluster(std::optional<ClusterConfig> config) {
  absl::MutexLock lock(&this_process_mu);
  if (this_process_cluster == nullptr) this_process_cluster = new std::optional<ClusterConfig>();
  *this_process_cluster = std::move(config);
}

}  // namespace ringwork
