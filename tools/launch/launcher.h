// Runs one program as every task of a localhost cluster (or of named hosts, over
// ssh) and supervises them, as torchrun or mpirun do: each task gets its TF_CONFIG, its output
// lines are prefixed with its task ("[worker:1] ..."), and when one task fails the others get a
// grace period to notice and exit on their own before they are stopped.
//
//   Launcher::Options options;
//   options.num_workers = 2;
//   options.command = {"bazel-bin/tools/train", "--epochs=1"};
//   absl::StatusOr<int> exit_code = Launcher(options).Run();
//
// The exit code is 0 when every task exited 0, otherwise the code of the first
// task that failed (128 + signal for a task killed by a signal). With
// max_restarts, a failed group is started again, as torchrun --max-restarts does;
// with BackupAndRestore the rerun resumes from the last backup. Every task gets
// one cluster token, made for this run (RINGWORK_CLUSTER_TOKEN), unless the
// environment has one.
#ifndef RINGWORK_TOOLS_LAUNCH_LAUNCHER_H_
#define RINGWORK_TOOLS_LAUNCH_LAUNCHER_H_

#include <sys/types.h>

#include <future>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/deadline.h"
#include "runtime/config/cluster_config.h"
#include "tools/launch/host_discovery.h"

namespace ringwork {

class Launcher {
 public:
  struct Options {
    int num_workers = 1;
    bool chief = false;
    bool evaluator = false;
    std::vector<std::string> command;        // Program and its arguments.
    std::map<std::string, std::string> env;  // Added to every task's environment.
    // After the first failure, how long the other tasks may take to exit on their
    // own (they should: their peers' failure is detected) before SIGTERM; then how
    // long before SIGKILL.
    double grace_s = 5;
    double kill_s = 5;
    // After a failure a restart could fix (not a config, checkpoint, auth or
    // mismatch error, nor a signal to launch itself), start every task again, up
    // to this many times; each run's tasks see RINGWORK_RESTART=<n>.
    int max_restarts = 0;
    // Elastic training (train --min_workers): a task's failure does not stop the
    // others, which go on without it (with max_restarts, only that task is started
    // again, after a backoff of 1, 2, 4... up to 30 s, while a ring task still
    // runs: it joins the running job at a step boundary); the job succeeds when a ring task exits 0
    // (the survivors finished) and every other exit was 3, 4 or a signal (what the
    // survivors survive); else it exits with the first other failure's code.
    bool elastic = false;
    // Growing onto new hosts (with elastic): a command that lists the hosts
    // available now (tools/launch/host_discovery.h). The hosts it lists at the
    // start give the workers of TF_CONFIG (the voting ring; one per slot, up to
    // max_workers); it is run again every discovery_interval_s, and each host
    // that appears (or comes back, or lists more slots) gets workers on its new
    // slots while fewer than max_workers ring tasks run: extras that join the
    // running job (RINGWORK_VOTING_WORKERS). The tasks of a host it no longer
    // lists are killed (SIGKILL) and never restarted: a failed host.
    std::string host_discovery;
    // Fixed hosts (launch --hosts=h1,h2:2, as horovodrun -H and mpirun --host do):
    // the ring's tasks, SLOTS per host (1 unless given) in the order listed (with
    // chief, the first slot is the chief), each host's on ports port, port + 1, ...
    // (as `tfconfig hosts`). Tasks on hosts other than this one start through the
    // remote shell, in launch's working directory there. Replaces num_workers; not
    // with host_discovery, evaluator, max_workers, or a timeline on remote hosts.
    std::vector<DiscoveredHost> hosts;
    int max_workers = 0;  // 0: every slot listed.
    double discovery_interval_s = 5;
    // With hosts or host_discovery, how a task starts on a host that is not this
    // one (or on any host, when set): this command, then the host, then one shell
    // command line (which reads the cluster token from its stdin). Default:
    // ssh -o BatchMode=yes. Its exit code is the task's.
    std::string remote_shell;
    // On a host that is not this one, task i of the ring listens on port + i.
    int port = 2222;
    // Non-empty: every ring task writes its timeline (RINGWORK_TIMELINE=
    // <timeline>.parts/<type>-<index>.json) and, when the group ends, whatever its
    // exit, they are merged into this one file (Chrome trace-event JSON, one process
    // row per task, clocks aligned on the chief's).
    std::string timeline;
  };

  explicit Launcher(Options options) : options_(std::move(options)) {}
  // Starts every task, waits for all of them, returns the exit code.
  absl::StatusOr<int> Run();

 private:
  struct Task {
    TaskId id;
    std::string tag;  // "[worker:1] "
    pid_t pid = -1;
    int out_fd = -1, err_fd = -1;
    std::string out_partial, err_partial;  // Bytes after the last newline.
    bool exited = false;
    int exit_code = 0;
    std::string tf_config;
    Deadline restart_at = Deadline::Never();  // Elastic: a restart is due then.
    bool restart_pending = false;
    // Elastic: times it was started again (each such process joins the running job).
    int restarts = 0;
    // With host_discovery: where it runs; an extra (added after the start, it
    // joins the running job); its host is gone (never restarted).
    std::string host;
    bool added = false;
    bool host_gone = false;
    bool remote = false;                     // Started through the remote shell.
    int remote_pid = 0;                      // Its pid on the host (its first output line says it).
    std::map<std::string, std::string> env;  // Its own (RINGWORK_VOTING_WORKERS).
  };
  // With host_discovery: the first hosts' ring, and their tasks.
  absl::StatusOr<ClusterSpec> SpecFromDiscoveredHosts();
  // --hosts: with host_discovery, evaluator or max_workers, this machine
  // (localhost) with other hosts, or --timeline with a remote task, is
  // INVALID_ARGUMENT.
  absl::Status CheckHosts() const;
  // The ring of `hosts`' slots (up to max_workers), and their tasks.
  absl::StatusOr<ClusterSpec> SpecOnHosts(const std::vector<DiscoveredHost>& hosts);
  // Runs the discovery command; kills the tasks of hosts gone, starts extras on
  // new slots.
  void PollHosts();
  absl::Status StartExtra(const std::string& host);
  int RingTasksRunning() const;
  // Signals a task: its process group here and, for a remote task, its process
  // on the host (through the remote shell: killing ssh stops nothing there).
  void Signal(Task& task, int signal);
  // Before launch returns: the remote shells Signal started have carried their
  // signals (or `timeout_s` passed), so that no task outlives launch on its host.
  void WaitForSignalHelpers(double timeout_s);
  void ReapSignalHelpers();  // Those that ended, without waiting.
  // Applies a finished discovery: kills the tasks of hosts gone, fills new slots.
  void ApplyHosts(const std::vector<DiscoveredHost>& hosts);
  // The task's address on its host: a free port on this machine, else port + index.
  absl::StatusOr<HostPort> AddressOn(const std::string& host, int ring_index);
  // Elastic: schedules a restart of `task`, which failed, if one is left and the
  // job still runs.
  void MaybeRestartLater(Task& task);
  bool RingTaskRuns() const;
  static bool SignalReceived();  // SIGINT or SIGTERM reached launch.
  void RestartDueTasks();
  static bool RestartCouldHelp(int exit_code);
  absl::StatusOr<int> RunAttempts();
  absl::StatusOr<int> RunGroup(int attempt);
  absl::Status Spawn(Task& task, const std::string& tf_config, int attempt);
  // Where task `id` writes its timeline (options_.timeline set).
  std::string TimelinePart(const TaskId& id) const;
  void ClearTimelineParts() const;
  // Merges the last group's timelines into options_.timeline.
  absl::Status MergeTimeline() const;
  void Drain(Task& task, int& fd, std::string& partial, int out_fd);
  void Reap();

  Options options_;
  std::vector<Task> tasks_;
  int first_failure_code_ = 0;
  std::string first_failure_task_;
  bool a_ring_task_succeeded_ = false;  // Elastic: the survivors finished.
  int other_failure_code_ = 0;          // Elastic: the first exit other than 0, 3, 4 or a signal.
  int elastic_restarts_ = 0;            // Tasks started again so far (elastic).
  double next_backoff_s_ = 1;
  // Host discovery: the voting ring's spec and the extras' addresses since
  // (every extra's TF_CONFIG lists them all, up to itself); per host listed now,
  // the slots started since it appeared; hosts gone.
  ClusterSpec voting_spec_;
  std::vector<HostPort> extras_;
  std::map<std::string, int> slots_filled_;
  Deadline next_discovery_ = Deadline::Never();
  // The discovery in flight (it runs beside the loop that reads the tasks' output).
  std::future<absl::StatusOr<std::vector<DiscoveredHost>>> discovery_;
  std::set<int> loopback_ports_;       // Given to tasks on this machine so far.
  std::vector<pid_t> signal_helpers_;  // Remote shells carrying a signal (Signal).
  std::string last_discovery_error_;
  bool warned_max_workers_ = false;
};

// The exit code a wait() status stands for: the exit status, or 128 + signal.
int ExitCodeOfWaitStatus(int status);

}  // namespace ringwork

#endif  // RINGWORK_TOOLS_LAUNCH_LAUNCHER_H_
