// launch: runs a program as every task of a localhost cluster, or of named hosts
// over ssh.
//
//   launch --num_workers=N [--chief] [--evaluator] [--max_restarts=K] -- PROGRAM ARGS...
//   launch --hosts=h1,h2,h3:2 [--port=2222] -- PROGRAM ARGS...
//   launch --elastic --host_discovery='cat hosts' --max_workers=8 -- PROGRAM ARGS...
//
// Each task gets a TF_CONFIG with free 127.0.0.1 ports; every output line is
// prefixed with its task; the exit code is the first failing task's (0 if none).
#include <algorithm>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/exit_code.h"
#include "base/flags.h"
#include "base/logging.h"
#include "runtime/config/hosts.h"
#include "tools/launch/launcher.h"

namespace ringwork {
namespace {

int Main(int argc, char** argv) {
  SetLogTask("launch");
  FlagSet flags(
      "launch: runs PROGRAM as every task of a localhost cluster, or of named hosts\n\n"
      "  launch --num_workers=N [--chief] [--evaluator] -- PROGRAM ARGS...\n"
      "  launch --hosts=HOST[:SLOTS],... [--port=2222] -- PROGRAM ARGS...\n\n"
      "Each task gets its TF_CONFIG; output lines are prefixed with the task; when a\n"
      "task fails, the others get --grace_s to exit, then SIGTERM, then SIGKILL; with\n"
      "--max_restarts=K the whole group is then started again (RINGWORK_RESTART=n).\n"
      "SIGTERM or SIGINT to launch is passed to every task (no restart follows).\n"
      "With --hosts, each host runs SLOTS tasks (1 unless given), in the order listed,\n"
      "on ports --port, --port+1, ...; hosts other than this one are reached with\n"
      "--remote_shell (ssh -o BatchMode=yes), in this working directory there; the\n"
      "remote exit codes are the tasks'.\n"
      "With --timeline=FILE every task records a timeline, merged into FILE at the end.\n"
      "With --elastic a failed task leaves the others running (train --min_workers);\n"
      "with --max_restarts too, only it is started again (after 1, 2, 4... s), and\n"
      "it joins the running job at a step boundary.\n"
      "With --elastic --host_discovery=CMD, CMD lists the hosts (HOST or HOST:SLOTS per\n"
      "line): those listed at the start run the job's workers; every\n"
      "--discovery_interval_s it runs again, hosts that appear get workers (up to\n"
      "--max_workers) that join the running job, and the tasks of hosts no longer\n"
      "listed are killed as failed. Other hosts are reached with --remote_shell.\n"
      "Exit code: the first failing task's code (0 when all succeed; with --elastic,\n"
      "0 when a ring task succeeded).");
  Launcher::Options options;
  int64_t num_workers = 2;
  flags.Int("num_workers", &num_workers, "number of worker tasks");
  flags.Bool("chief", &options.chief, "add a chief task (rank 0)");
  flags.Bool("evaluator", &options.evaluator, "add an evaluator task");
  flags.Double("grace_s", &options.grace_s,
               "after a task fails, how long the others may take to exit by themselves");
  flags.Double("kill_s", &options.kill_s, "after SIGTERM, how long before SIGKILL");
  int64_t max_restarts = 0;
  flags.Int("max_restarts", &max_restarts,
            "restart every task after a failure a restart could fix, up to this many times "
            "(with --elastic: restart only the task that failed, which joins the running job)");
  flags.Bool("elastic", &options.elastic,
             "elastic training (train --min_workers): a failed task does not stop the others; "
             "the job succeeds when the survivors do");
  flags.String("host_discovery", &options.host_discovery,
               "with --elastic: a shell command printing the hosts available now, one per line "
               "(HOST or HOST:SLOTS); workers start on hosts that appear and hosts that "
               "disappear count as failed (--num_workers is then ignored)");
  std::string hosts;
  flags.String("hosts", &hosts,
               "run the ring's tasks on these hosts, HOST or HOST:SLOTS separated by commas "
               "(as horovodrun -H); tasks on other hosts start through --remote_shell "
               "(--num_workers is then the number of slots)");
  int64_t max_workers = 0;
  flags.Int("max_workers", &max_workers,
            "with --host_discovery: at most this many ring tasks run (0: one per slot listed)");
  flags.Double("discovery_interval_s", &options.discovery_interval_s,
               "with --host_discovery: how often the hosts are listed again");
  flags.String("remote_shell", &options.remote_shell,
               "with --hosts or --host_discovery: runs a task on a host as REMOTE_SHELL HOST "
               "COMMAND_LINE "
               "(split on spaces; the default, for hosts other than this one, is "
               "\"ssh -o BatchMode=yes\")");
  int64_t port = 2222;
  flags.Int("port", &port,
            "with --hosts: each host's tasks listen on this port, port + 1, ... (as tfconfig "
            "hosts); with --host_discovery: on hosts other than this one, ring task i listens "
            "on this port + i");
  flags.String("timeline", &options.timeline,
               "merge every task's timeline into this file (Chrome trace-event JSON: "
               "chrome://tracing, Perfetto), clocks aligned on the chief's");
  absl::StatusOr<std::vector<std::string>> command = flags.Parse(argc, argv);
  if (flags.help_requested()) {
    std::cout << flags.HelpText("launch");
    return kOk;
  }
  if (!command.ok()) ExitWithStatus(command.status());
  options.num_workers = static_cast<int>(num_workers);
  if (!hosts.empty()) {
    absl::StatusOr<std::vector<DiscoveredHost>> listed =
        ParseHostList(absl::StrReplaceAll(hosts, {{",", "\n"}}), "--hosts, host ");
    if (!listed.ok()) ExitWithStatus(listed.status());
    if (listed->empty()) ExitWithStatus(absl::InvalidArgumentError("--hosts lists no host"));
    int slots = 0, most = 1;
    std::vector<std::string> names;
    for (const DiscoveredHost& host : *listed) {
      slots += host.slots;
      most = std::max(most, host.slots);
      names.push_back(host.host);
    }
    // Names TF_CONFIG takes (no user@, no option for ssh), each host's ports valid.
    if (hosts.find('#') != std::string::npos) {
      ExitWithStatus(absl::InvalidArgumentError(absl::StrCat("--hosts=", hosts, ": '#' in it")));
    }
    if (absl::Status valid = HostsClusterSpec(names, static_cast<int>(port), most).status();
        !valid.ok()) {
      ExitWithStatus(absl::InvalidArgumentError(absl::StrCat("--hosts: ", valid.message())));
    }
    if (flags.IsSet("num_workers") && num_workers != slots) {
      ExitWithStatus(absl::InvalidArgumentError(absl::StrCat("--num_workers=", num_workers,
                                                             " but --hosts=", hosts, " has ", slots,
                                                             " slots; give one of them")));
    }
    options.hosts = *listed;
  }
  options.max_restarts = static_cast<int>(max_restarts);
  options.max_workers = static_cast<int>(max_workers);
  options.port = static_cast<int>(port);
  options.command = *command;
  absl::StatusOr<int> code = Launcher(options).Run();
  if (!code.ok()) ExitWithStatus(code.status());
  return *code;
}

}  // namespace
}  // namespace ringwork

int main(int argc, char** argv) { return ringwork::Main(argc, argv); }
