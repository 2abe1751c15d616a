// launch: runs a program as every task of a localhost cluster.
//
//   launch --num_workers=N [--chief] [--evaluator] [--max_restarts=K] -- PROGRAM ARGS...
//
// Each task gets a TF_CONFIG with free 127.0.0.1 ports; every output line is
// prefixed with its task; the exit code is the first failing task's (0 if none).
#include <iostream>

#include "base/exit_code.h"
#include "base/flags.h"
#include "base/logging.h"
#include "tools/launch/launcher.h"

namespace ringwork {
namespace {

int Main(int argc, char** argv) {
  SetLogTask("launch");
  FlagSet flags(
      "launch: runs PROGRAM as every task of a localhost cluster\n\n"
      "  launch --num_workers=N [--chief] [--evaluator] -- PROGRAM ARGS...\n\n"
      "Each task gets its TF_CONFIG; output lines are prefixed with the task; when a\n"
      "task fails, the others get --grace_s to exit, then SIGTERM, then SIGKILL; with\n"
      "--max_restarts=K the whole group is then started again (RINGWORK_RESTART=n).\n"
      "SIGTERM or SIGINT to launch is passed to every task (no restart follows).\n"
      "With --timeline=FILE every task records a timeline, merged into FILE at the end.\n"
      "With --elastic a failed task leaves the others running (train --min_workers);\n"
      "with --max_restarts too, only it is started again (after 1, 2, 4... s), and\n"
      "it joins the running job at a step boundary.\n"
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
  options.max_restarts = static_cast<int>(max_restarts);
  options.command = *command;
  absl::StatusOr<int> code = Launcher(options).Run();
  if (!code.ok()) ExitWithStatus(code.status());
  return *code;
}

}  // namespace
}  // namespace ringwork

int main(int argc, char** argv) { return ringwork::Main(argc, argv); }
