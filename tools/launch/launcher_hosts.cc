// Launcher on named hosts: fixed ones (--hosts), or with host discovery
// (elastic): the ring of the hosts listed at the start, and workers added on
// hosts that appear while the job runs.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/exit_code.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "runtime/config/localhost.h"
#include "runtime/config/tf_config.h"
#include "tools/launch/host_discovery.h"
#include "tools/launch/launcher.h"

namespace ringwork {

absl::StatusOr<HostPort> Launcher::AddressOn(const std::string& host, int ring_index) {
  if (IsLoopbackHost(host)) {
    // Never one given to another task of this launch (each was free a moment ago).
    for (int attempt = 0; attempt < 100; ++attempt) {
      RW_ASSIGN_OR_RETURN(std::vector<int> ports, PickFreePorts(1));
      if (loopback_ports_.insert(ports[0]).second) return HostPort{"127.0.0.1", ports[0]};
    }
    return absl::UnavailableError("no free port on this machine that no task has");
  }
  const int port = options_.port + ring_index;
  if (port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--port=", options_.port, ": task ", ring_index, " would need port ", port));
  }
  return HostPort{host, port};
}

absl::StatusOr<ClusterSpec> Launcher::SpecOnHosts(const std::vector<DiscoveredHost>& hosts) {
  ClusterSpec spec;
  std::vector<std::string> task_hosts;
  for (const DiscoveredHost& host : hosts) {
    for (int slot = 0; slot < host.slots; ++slot) {
      const int index = static_cast<int>(task_hosts.size());
      if (options_.max_workers > 0 && index >= options_.max_workers) break;
      // --hosts: each host's tasks on port, port + 1, ... (as tfconfig hosts);
      // discovered hosts: ring task i on port + i (extras keep numbering).
      RW_ASSIGN_OR_RETURN(HostPort address,
                          AddressOn(host.host, options_.hosts.empty() ? index : slot));
      if (options_.chief && spec.chief.empty()) {
        spec.chief.push_back(address);
      } else {
        spec.worker.push_back(address);
      }
      task_hosts.push_back(host.host);
      ++slots_filled_[host.host];
    }
  }
  for (const DiscoveredHost& host : hosts) {
    const int filled = slots_filled_[host.host];
    RW_LOG(INFO) << "host " << host.host << ": " << filled << " task" << (filled == 1 ? "" : "s");
  }
  const std::vector<TaskId> ids = AllTasks(spec);
  for (size_t i = 0; i < ids.size(); ++i) {
    Task task;
    task.id = ids[i];
    task.tag = absl::StrCat("[", ids[i].ToString(), "] ");
    task.host = task_hosts[i];
    tasks_.push_back(std::move(task));
  }
  return spec;
}

absl::Status Launcher::CheckHosts() const {
  if (!options_.host_discovery.empty() || options_.evaluator || options_.max_workers > 0) {
    return absl::InvalidArgumentError(
        "--hosts names every ring task's host: not with --host_discovery, --evaluator or "
        "--max_workers");
  }
  std::string loopback, other;
  for (const DiscoveredHost& host : options_.hosts) {
    (IsLoopbackHost(host.host) ? loopback : other) = host.host;
  }
  if (!loopback.empty() && !other.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--hosts lists ", loopback, " (this machine) and ", other,
        ": the other hosts cannot reach a loopback address; name this machine by an address "
        "they reach"));
  }
  if (!options_.timeline.empty() && (!other.empty() || !options_.remote_shell.empty())) {
    return absl::InvalidArgumentError(
        "--timeline writes each task's part on launch's machine: not with tasks on other hosts");
  }
  return absl::OkStatus();
}

absl::StatusOr<ClusterSpec> Launcher::SpecFromDiscoveredHosts() {
  if (!options_.elastic) {
    return absl::InvalidArgumentError("--host_discovery needs --elastic (train --min_workers)");
  }
  if (options_.evaluator) {
    return absl::InvalidArgumentError("--host_discovery does not place an --evaluator");
  }
  absl::StatusOr<std::vector<DiscoveredHost>> hosts =
      DiscoverHosts(options_.host_discovery, std::min(10.0, options_.discovery_interval_s + 5));
  if (!hosts.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--host_discovery at the start: ", hosts.status().message()));
  }
  RW_ASSIGN_OR_RETURN(ClusterSpec spec, SpecOnHosts(*hosts));
  if (tasks_.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("--host_discovery lists ", tasks_.size(),
                     " slots at the start; an elastic job starts with at least 2 workers"));
  }
  voting_spec_ = spec;
  extras_.clear();
  next_discovery_ = Deadline::AfterSeconds(options_.discovery_interval_s);
  return spec;
}

void Launcher::Signal(Task& task, int signal) {
  if (task.pid <= 0) return;  // Never started.
  // A remote task whose pid is known gets the signal on its host, and the remote
  // shell here ends when it does, with its exit code; only SIGKILL ends the
  // remote shell too (a task that does not stop, or a host that does not answer).
  if (!task.remote || task.remote_pid <= 0 || signal == SIGKILL) ::kill(-task.pid, signal);
  if (!task.remote || task.remote_pid <= 0) return;
  // `REMOTE_SHELL HOST 'kill -SIG PID'`, not waited for (a host gone may never
  // answer; ssh's own timeout ends it).
  std::vector<std::string> args =
      absl::StrSplit(options_.remote_shell.empty() ? kDefaultRemoteShell : options_.remote_shell,
                     ' ', absl::SkipEmpty());
  args.push_back(task.host);
  args.push_back(absl::StrCat("kill -", signal, " ", task.remote_pid, " 2>/dev/null"));
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    // A group of its own: a second Ctrl-C to launch does not cut it short, and
    // WaitForSignalHelpers can stop it.
    ::setpgid(0, 0);
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, STDIN_FILENO);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  if (pid > 0) signal_helpers_.push_back(pid);  // Reaped by Reap().
}

void Launcher::ReapSignalHelpers() {
  for (auto it = signal_helpers_.begin(); it != signal_helpers_.end();) {
    it = ::waitpid(*it, nullptr, WNOHANG) == 0 ? it + 1 : signal_helpers_.erase(it);
  }
}

void Launcher::WaitForSignalHelpers(double timeout_s) {
  const Deadline deadline = Deadline::AfterSeconds(timeout_s);
  while (!signal_helpers_.empty() && !deadline.Expired()) {
    ReapSignalHelpers();
    if (!signal_helpers_.empty()) ::usleep(20000);
  }
  for (pid_t pid : signal_helpers_) {
    RW_LOG(WARNING) << "a remote shell carrying a signal to a task (pid " << pid
                    << ") did not end within " << timeout_s
                    << " s: stopped; the task may still run on its host";
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  signal_helpers_.clear();
}

int Launcher::RingTasksRunning() const {
  int running = 0;
  for (const Task& task : tasks_) {
    if (task.id.type != TaskType::kEvaluator && (!task.exited || task.restart_pending)) ++running;
  }
  return running;
}

absl::Status Launcher::StartExtra(const std::string& host) {
  const int ring_index =
      static_cast<int>(voting_spec_.chief.size() + voting_spec_.worker.size() + extras_.size());
  RW_ASSIGN_OR_RETURN(HostPort address, AddressOn(host, ring_index));
  extras_.push_back(address);
  ClusterSpec spec = voting_spec_;
  for (const HostPort& extra : extras_) spec.worker.push_back(extra);
  Task task;
  task.id = TaskId{TaskType::kWorker, static_cast<int>(spec.worker.size()) - 1};
  task.tag = absl::StrCat("[", task.id.ToString(), "] ");
  task.host = host;
  task.added = true;
  task.env["RINGWORK_VOTING_WORKERS"] = std::to_string(voting_spec_.worker.size());
  task.tf_config = ToTfConfigJson(ClusterConfig(spec, task.id, "launch"));
  tasks_.push_back(std::move(task));
  Task& added = tasks_.back();
  absl::Status spawned = Spawn(added, added.tf_config, 0);
  if (!spawned.ok()) {  // (pid stays -1: never signalled.)
    added.exited = true;
    added.exit_code = kInternal;
    return spawned;
  }
  RW_LOG(INFO) << "--host_discovery: started " << added.id.ToString() << " on " << host << " ("
               << address.ToString() << "); it joins the running job";
  return absl::OkStatus();
}

void Launcher::PollHosts() {
  // One discovery at a time, beside the loop: launch goes on reading output,
  // reaping and passing signals while the command runs.
  if (discovery_.valid()) {
    if (discovery_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
    absl::StatusOr<std::vector<DiscoveredHost>> hosts = discovery_.get();
    next_discovery_ = Deadline::AfterSeconds(options_.discovery_interval_s);
    if (!hosts.ok() || hosts->empty()) {
      // The hosts stay as they were (a discovery that fails now and then, or a
      // file read while being rewritten, is no host failure); said once per error.
      const std::string error =
          hosts.ok() ? "it listed no host" : std::string(hosts.status().message());
      if (last_discovery_error_ != error) {
        last_discovery_error_ = error;
        RW_LOG(WARNING) << "--host_discovery: " << error << "; keeping the hosts as they were";
      }
      return;
    }
    last_discovery_error_.clear();
    ApplyHosts(*hosts);
    return;
  }
  if (!next_discovery_.Expired()) return;
  next_discovery_ = Deadline::Never();
  discovery_ = std::async(std::launch::async, DiscoverHosts, options_.host_discovery,
                          std::min(10.0, options_.discovery_interval_s + 5));
}

void Launcher::ApplyHosts(const std::vector<DiscoveredHost>& hosts) {
  std::set<std::string> listed;
  for (const DiscoveredHost& host : hosts) listed.insert(host.host);
  // Hosts gone: their tasks are a failed host's.
  for (auto it = slots_filled_.begin(); it != slots_filled_.end();) {
    if (listed.count(it->first)) {
      ++it;
      continue;
    }
    RW_LOG(WARNING) << "--host_discovery: host " << it->first
                    << " is no longer listed; its tasks are stopped as failed (SIGKILL)";
    for (Task& task : tasks_) {
      if (task.host != it->first || task.host_gone) continue;
      task.host_gone = true;
      task.restart_pending = false;
      if (!task.exited) Signal(task, SIGKILL);
    }
    it = slots_filled_.erase(it);
  }
  // The job ended (or is ending): nothing new starts.
  if (SignalReceived() || a_ring_task_succeeded_ || !RingTaskRuns()) return;
  for (const DiscoveredHost& host : hosts) {
    int& filled = slots_filled_[host.host];
    while (filled < host.slots) {
      if (options_.max_workers > 0 && RingTasksRunning() >= options_.max_workers) {
        if (!warned_max_workers_) {
          RW_LOG(INFO) << "--host_discovery: " << options_.max_workers
                       << " ring tasks run (--max_workers); host " << host.host
                       << " gets workers when some leave";
          warned_max_workers_ = true;
        }
        return;
      }
      absl::Status started = StartExtra(host.host);
      ++filled;
      if (!started.ok()) {
        RW_LOG(ERROR) << "--host_discovery: cannot start a worker on " << host.host << ": "
                      << started.message();
      }
    }
  }
  warned_max_workers_ = false;
}

}  // namespace ringwork
