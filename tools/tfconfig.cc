// tfconfig: check, generate and convert TF_CONFIGs.
//
//   tfconfig validate [--tf_config=JSON | --tf_config_file=PATH]
//       Reads TF_CONFIG (or the flag) and prints the role table, or the error
//       (exit 2).
//   tfconfig localhost --num_workers=N [--chief] [--evaluator]
//       Prints one TF_CONFIG per task, one per line, with free 127.0.0.1 ports.
//   tfconfig hosts HOST1,HOST2,... [--port=2222] [--workers_per_host=N]
//       Prints one TF_CONFIG per task, one per line: the workers on each host in
//       the order given, on ports PORT, PORT + 1, ... (worker 0 is the chief).
//   tfconfig from-slurm [--slurm_base_port=P]
//       Prints this Slurm task's TF_CONFIG:  export TF_CONFIG=$(tfconfig from-slurm)
#include <iostream>

#include "absl/strings/str_split.h"
#include "base/exit_code.h"
#include "base/flags.h"
#include "base/logging.h"
#include "runtime/config/cluster_source.h"
#include "runtime/config/hosts.h"
#include "runtime/config/localhost.h"
#include "runtime/config/slurm.h"
#include "runtime/config/tf_config.h"

namespace ringwork {
namespace {

constexpr const char* kUsage =
    "tfconfig: check, generate and convert TF_CONFIGs\n"
    "\n"
    "  tfconfig validate [--tf_config=JSON | --tf_config_file=PATH]\n"
    "      prints the role table of TF_CONFIG (or of the flag), or the error\n"
    "  tfconfig localhost --num_workers=N [--chief] [--evaluator]\n"
    "      prints one TF_CONFIG per task (one per line) with free 127.0.0.1 ports\n"
    "  tfconfig hosts HOST1,HOST2,... [--port=2222] [--workers_per_host=N]\n"
    "      prints one TF_CONFIG per task (one per line): N workers on each host, in\n"
    "      the order given, on ports PORT, PORT + 1, ...\n"
    "  tfconfig from-slurm [--slurm_base_port=P]\n"
    "      prints the TF_CONFIG of this Slurm task\n"
    "\n"
    "Exit codes: 0 ok, 2 usage or config error.";

int Main(int argc, char** argv) {
  SetLogTask("tfconfig");
  FlagSet flags(kUsage);
  ClusterSourceFlags source;
  source.Register(&flags);
  int64_t num_workers = 0;
  bool chief = false, evaluator = false;
  flags.Int("num_workers", &num_workers, "localhost: number of worker tasks");
  flags.Bool("chief", &chief, "localhost: add a chief task");
  flags.Bool("evaluator", &evaluator, "localhost: add an evaluator task");
  int64_t port = 2222, workers_per_host = 1;
  flags.Int("port", &port, "hosts: the first worker's port on each host");
  flags.Int("workers_per_host", &workers_per_host, "hosts: workers on each host");
  absl::StatusOr<std::vector<std::string>> args = flags.Parse(argc, argv);
  if (flags.help_requested()) {
    std::cout << flags.HelpText("tfconfig");
    return kOk;
  }
  if (!args.ok()) ExitWithStatus(args.status());
  const bool hosts = !args->empty() && (*args)[0] == "hosts";
  if (args->size() != (hosts ? 2u : 1u)) {
    std::cerr << kUsage << "\n";
    ExitWithStatus(absl::InvalidArgumentError(
        hosts ? "tfconfig hosts takes one list of hosts: HOST1,HOST2,..."
              : "expected exactly one command: validate, localhost, hosts or from-slurm"));
  }
  const std::string& command = (*args)[0];
  if (hosts) {
    absl::StatusOr<ClusterSpec> spec =
        HostsClusterSpec(absl::StrSplit((*args)[1], ','), static_cast<int>(port),
                         static_cast<int>(workers_per_host));
    if (!spec.ok()) ExitWithStatus(spec.status());
    for (const TaskId& task : AllTasks(*spec)) {
      std::cout << ToTfConfigJson(ClusterConfig(*spec, task, "hosts")) << "\n";
    }
    return kOk;
  }
  if (command == "validate") {
    absl::StatusOr<ClusterConfig> config = ResolveCluster(source, EnvFromProcess());
    if (!config.ok()) ExitWithStatus(config.status());
    std::cout << config->RoleTable();
    return kOk;
  }
  if (command == "localhost") {
    absl::StatusOr<ClusterSpec> spec =
        LocalhostClusterSpec(static_cast<int>(num_workers), chief, evaluator);
    if (!spec.ok()) ExitWithStatus(spec.status());
    for (const TaskId& task : AllTasks(*spec)) {
      std::cout << ToTfConfigJson(ClusterConfig(*spec, task, "localhost")) << "\n";
    }
    return kOk;
  }
  if (command == "from-slurm") {
    absl::StatusOr<ClusterConfig> config =
        ClusterFromSlurm(EnvFromProcess(), static_cast<int>(source.slurm_base_port));
    if (!config.ok()) ExitWithStatus(config.status());
    std::cout << ToTfConfigJson(*config) << "\n";
    return kOk;
  }
  ExitWithStatus(absl::InvalidArgumentError(
      "unknown command \"" + command + "\"; expected validate, localhost, hosts or from-slurm"));
}

}  // namespace
}  // namespace ringwork

int main(int argc, char** argv) { return ringwork::Main(argc, argv); }
