#include "tools/launch/launcher.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/deadline.h"
#include "base/exit_code.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "observability/timeline_merge.h"
#include "runtime/auth/cluster_token.h"
#include "runtime/config/localhost.h"
#include "runtime/config/tf_config.h"
#include "tools/launch/host_discovery.h"

extern char** environ;

namespace ringwork {
namespace {

void WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// Set by SIGINT/SIGTERM: forward to the tasks.
volatile sig_atomic_t g_signal = 0;
void OnSignal(int signal) { g_signal = signal; }

}  // namespace

bool Launcher::SignalReceived() { return g_signal != 0; }

int ExitCodeOfWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

absl::Status Launcher::Spawn(Task& task, const std::string& tf_config, int attempt) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  // Everything the child needs, built before fork.
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr) env[std::string(*e, eq - *e)] = eq + 1;
  }
  for (const auto& [key, value] : options_.env) env[key] = value;
  for (const auto& [key, value] : task.env) env[key] = value;
  env["TF_CONFIG"] = tf_config;
  env["RINGWORK_RESTART"] = std::to_string(attempt);  // As torchrun's TORCHELASTIC_RESTART_COUNT.
  env["RINGWORK_LOG_TASK_TAG"] = "0";                 // We prefix every line ourselves.
  if (!options_.timeline.empty() && task.id.type != TaskType::kEvaluator) {
    env["RINGWORK_TIMELINE"] = TimelinePart(task.id);
  }
  std::vector<std::string> env_strings;
  for (const auto& [key, value] : env) env_strings.push_back(key + "=" + value);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = options_.command;
  // On another host (or through the given remote shell): REMOTE_SHELL HOST LINE,
  // the line carrying the environment the task needs; the cluster token travels
  // on its stdin, never on a command line.
  const bool remote =
      !task.host.empty() && (!options_.remote_shell.empty() || !IsLoopbackHost(task.host));
  int token_pipe[2] = {-1, -1};
  task.remote = remote;
  task.remote_pid = 0;
  if (remote) {
    // Ringwork's settings of launch's environment travel (as mpirun -x would);
    // the rest of it is this machine's.
    std::map<std::string, std::string> task_env;
    for (const auto& [key, value] : env) {
      if (absl::StartsWith(key, "RINGWORK_")) task_env[key] = value;
    }
    for (const auto& [key, value] : options_.env) task_env[key] = value;
    for (const auto& [key, value] : task.env) task_env[key] = value;
    for (const char* key :
         {"TF_CONFIG", "RINGWORK_RESTART", "RINGWORK_LOG_TASK_TAG", "RINGWORK_TIMELINE"}) {
      if (env.count(key)) task_env[key] = env[key];
    }
    const std::string token = env.count(kClusterTokenEnv) ? env[kClusterTokenEnv] : "";
    task_env.erase(kClusterTokenEnv);
    char cwd[4096] = "/";
    if (::getcwd(cwd, sizeof(cwd)) == nullptr) std::strcpy(cwd, "/");
    const std::string line =
        absl::StrCat("IFS= read -r ", kClusterTokenEnv, "; export ", kClusterTokenEnv, "; ",
                     RemoteCommandLine(cwd, task_env, options_.command));
    args =
        absl::StrSplit(options_.remote_shell.empty() ? kDefaultRemoteShell : options_.remote_shell,
                       ' ', absl::SkipEmpty());
    args.push_back(task.host);
    args.push_back(line);
    if (::pipe2(token_pipe, O_CLOEXEC) != 0) {
      return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
    }
    const std::string token_line = token + "\n";
    // A pipe's buffer holds a token's line: written now, read by the remote shell.
    WriteAll(token_pipe[1], token_line);
    ::close(token_pipe[1]);
  }
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    // Its own process group, so that stopping a task stops what it started too;
    // a remote shell also its own session, without this terminal: a remote shell
    // that would ask for a password fails instead of waiting (stopped) for it.
    if (remote) {
      ::setsid();
    } else {
      ::setpgid(0, 0);
    }
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    if (token_pipe[0] >= 0) ::dup2(token_pipe[0], STDIN_FILENO);
    // A remote shell is found on PATH (ssh); the program itself is a path.
    if (remote) {
      ::execvpe(argv[0], argv.data(), envp.data());
    } else {
      ::execve(argv[0], argv.data(), envp.data());
    }
    const std::string message =
        std::string("launch: cannot run ") + argv[0] + ": " + std::strerror(errno) + "\n";
    (void)!::write(STDERR_FILENO, message.data(), message.size());
    ::_exit(kUsageOrConfig);
  }
  ::close(out[1]);
  ::close(err[1]);
  if (token_pipe[0] >= 0) ::close(token_pipe[0]);
  ::setpgid(pid, pid);  // Also here: whichever runs first.
  task.pid = pid;
  task.out_fd = out[0];
  task.err_fd = err[0];
  return absl::OkStatus();
}

void Launcher::Drain(Task& task, int& fd, std::string& partial, int out_fd) {
  char buffer[65536];
  const ssize_t n = ::read(fd, buffer, sizeof(buffer));
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    if (!partial.empty()) WriteAll(out_fd, task.tag + partial + "\n");
    partial.clear();
    ::close(fd);
    fd = -1;
    return;
  }
  partial.append(buffer, static_cast<size_t>(n));
  std::string lines;
  size_t start = 0;
  for (size_t newline; (newline = partial.find('\n', start)) != std::string::npos;
       start = newline + 1) {
    const absl::string_view line(partial.data() + start, newline - start);
    if (task.remote && task.remote_pid == 0 && absl::StartsWith(line, kRemotePidPrefix)) {
      // The remote shell's first line: the task's pid on its host (Signal).
      if (!absl::SimpleAtoi(line.substr(sizeof(kRemotePidPrefix) - 1), &task.remote_pid))
        task.remote_pid = -1;
      continue;
    }
    lines += task.tag;
    lines.append(partial, start, newline - start + 1);
  }
  partial.erase(0, start);
  if (!lines.empty()) WriteAll(out_fd, lines);
}

void Launcher::Reap() {
  ReapSignalHelpers();
  for (Task& task : tasks_) {
    if (task.exited) continue;
    int status = 0;
    if (::waitpid(task.pid, &status, WNOHANG) != task.pid) continue;
    task.exited = true;
    task.remote_pid = 0;  // Ended there too (the remote shell waits for it): never signalled.
    task.exit_code = ExitCodeOfWaitStatus(status);
    // Elastic: a task that failed for its peers (3, 4) or was killed is what the
    // others survive, and so is a restarted task's mismatch with the ring it
    // joined (7: it left alone, the others went on); any other failure (a bug, a
    // config or checkpoint error, a mismatch of a first run) is the job's.
    // A worker added on a new host that could not even start (exit 2: its
    // TF_CONFIG, its flags, a ring that outgrew --global_batch_size) never was
    // part of the job either.
    const bool joiner = options_.elastic && (task.restarts > 0 || task.added);
    const bool added_failed_to_start = task.added && task.exit_code == kUsageOrConfig;
    const bool survivable = task.exit_code == kPeerFailure || task.exit_code == kTimeout ||
                            task.exit_code > 128 || (joiner && task.exit_code == kMismatch) ||
                            added_failed_to_start;
    if (task.exit_code != 0 && !survivable && other_failure_code_ == 0)
      other_failure_code_ = task.exit_code;
    // Not after SIGTERM's exit (143): every worker stopped together, on purpose.
    if (options_.elastic && survivable && task.exit_code != kPreempted && !added_failed_to_start &&
        task.id.type != TaskType::kEvaluator) {
      MaybeRestartLater(task);
    }
    if (task.exit_code != 0 && (first_failure_task_.empty() || options_.elastic)) {
      if (first_failure_task_.empty()) {
        first_failure_code_ = task.exit_code;
        first_failure_task_ = task.id.ToString();
      }
      RW_LOG(ERROR)
          << task.id.ToString() << " exited with code " << task.exit_code << " ("
          << (task.remote && task.exit_code == 255
                  ? std::string(
                        "the remote shell failed: the host unreachable or the login refused")
              : task.exit_code > 128 ? absl::StrCat("killed by signal ", task.exit_code - 128)
                                     : std::string(ExitCodeName(task.exit_code)))
          << (options_.elastic
                  ? absl::StrCat(joiner ? "; it was started again to join the job" : "",
                                 "); --elastic: the others go on without it")
                  : absl::StrCat("); the other tasks get ", options_.grace_s,
                                 " s (--grace_s) to exit before they are stopped"));
    } else {
      if (task.exit_code == 0 && task.id.type != TaskType::kEvaluator)
        a_ring_task_succeeded_ = true;
      RW_LOG(INFO) << task.id.ToString() << " exited with code " << task.exit_code;
    }
  }
}

bool Launcher::RingTaskRuns() const {
  for (const Task& task : tasks_) {
    if (!task.exited && task.id.type != TaskType::kEvaluator) return true;
  }
  return false;
}

void Launcher::MaybeRestartLater(Task& task) {
  if (elastic_restarts_ >= options_.max_restarts || a_ring_task_succeeded_ || g_signal != 0 ||
      !RingTaskRuns() || task.host_gone) {
    return;
  }
  ++elastic_restarts_;
  task.restart_pending = true;
  task.restart_at = Deadline::AfterSeconds(next_backoff_s_);
  RW_LOG(WARNING) << "--elastic: restarting " << task.id.ToString() << " in " << next_backoff_s_
                  << " s (restart " << elastic_restarts_ << " of " << options_.max_restarts
                  << "); it joins the running job";
  next_backoff_s_ = std::min(30.0, next_backoff_s_ * 2);
}

void Launcher::RestartDueTasks() {
  // The job ended meanwhile (its workers finished, failed or were signalled): no
  // restart is due any more, and launch need not wait for one.
  const bool job_ended = g_signal != 0 || a_ring_task_succeeded_ || !RingTaskRuns();
  for (Task& task : tasks_) {
    if (!task.restart_pending || (!job_ended && !task.restart_at.Expired())) continue;
    task.restart_pending = false;
    if (job_ended) {
      RW_LOG(WARNING) << "--elastic: not restarting " << task.id.ToString()
                      << ": the job no longer runs";
      continue;
    }
    Signal(task, SIGKILL);  // Whatever the failed task left running (its port).
    for (int* fd : {&task.out_fd, &task.err_fd}) {
      std::string& partial = fd == &task.out_fd ? task.out_partial : task.err_partial;
      if (!partial.empty())
        WriteAll(fd == &task.out_fd ? STDOUT_FILENO : STDERR_FILENO, task.tag + partial + "\n");
      partial.clear();
      if (*fd >= 0) ::close(*fd);
      *fd = -1;
    }
    task.exited = false;
    task.exit_code = 0;
    ++task.restarts;
    absl::Status spawned = Spawn(task, task.tf_config, elastic_restarts_);
    if (!spawned.ok()) {
      RW_LOG(ERROR) << "--elastic: cannot restart " << task.id.ToString() << ": "
                    << spawned.message();
      task.exited = true;
      task.exit_code = kInternal;
      if (other_failure_code_ == 0) other_failure_code_ = kInternal;
      continue;
    }
    RW_LOG(INFO) << "--elastic: restarted " << task.id.ToString();
  }
}

bool Launcher::RestartCouldHelp(int code) {
  switch (code) {
    case kUsageOrConfig:      // The same flags or TF_CONFIG fail again;
    case kInvalidCheckpoint:  // so does the same checkpoint;
    case kAuthRejected:       // and the same credentials;
    case kMismatch:           // and the same models;
    case kInvalidData:        // and the same bad records.
    case kPreempted:          // Asked to stop.
      return false;
    default:
      return true;  // A dead or stuck peer, a timeout, a crash, a bug.
  }
}

std::string Launcher::TimelinePart(const TaskId& id) const {
  std::string name = id.ToString();
  std::replace(name.begin(), name.end(), ':', '-');
  return absl::StrCat(options_.timeline, ".parts/", name, ".json");
}

void Launcher::ClearTimelineParts() const {
  // Left by an earlier attempt or job: a task that dies before writing its own
  // must not be represented by another run's.
  const std::string parts = options_.timeline + ".parts";
  if (DIR* dir = ::opendir(parts.c_str())) {
    while (const dirent* entry = ::readdir(dir)) {
      const std::string name = entry->d_name;
      if (absl::EndsWith(name, ".json") || absl::EndsWith(name, ".json.tmp")) {
        ::unlink((parts + "/" + name).c_str());
      }
    }
    ::closedir(dir);
  }
}

absl::Status Launcher::MergeTimeline() const {
  std::vector<std::string> parts;
  for (const Task& task : tasks_) {
    if (task.id.type != TaskType::kEvaluator) parts.push_back(TimelinePart(task.id));
  }
  absl::StatusOr<TimelineMergeResult> merged = MergeTimelines(parts, options_.timeline);
  if (!merged.ok()) {
    return absl::Status(merged.status().code(), absl::StrCat("--timeline=", options_.timeline, ": ",
                                                             merged.status().message()));
  }
  RW_LOG(INFO) << "timeline of " << merged->tasks << " tasks written to " << options_.timeline
               << (merged->missing.empty()
                       ? std::string()
                       : absl::StrCat(" (no timeline from: ", absl::StrJoin(merged->missing, ", "),
                                      ")"))
               << (merged->unaligned.empty()
                       ? std::string()
                       : absl::StrCat("; on an unknown clock, placed to start with the job: ",
                                      absl::StrJoin(merged->unaligned, ", ")));
  for (const std::string& part : parts) std::remove(part.c_str());
  ::rmdir((options_.timeline + ".parts").c_str());
  return absl::OkStatus();
}

absl::StatusOr<int> Launcher::Run() {
  if (!options_.timeline.empty()) {
    const std::string parts = options_.timeline + ".parts";
    if (::mkdir(parts.c_str(), 0700) != 0 && errno != EEXIST) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--timeline=", options_.timeline, ": cannot create ", parts, ": ", std::strerror(errno)));
    }
  }
  absl::StatusOr<int> code = RunAttempts();
  if (!options_.timeline.empty() && code.ok()) {
    // A failed job's timeline shows where it stood; a merge failure fails a job
    // that succeeded only.
    absl::Status merged = MergeTimeline();
    if (!merged.ok()) {
      RW_LOG(ERROR) << merged.message();
      if (*code == 0) return merged;
    }
  }
  return code;
}

absl::StatusOr<int> Launcher::RunAttempts() {
  // One secret per group: tasks of another run, or anyone else on this host, cannot
  // talk to these workers. Passed in the environment, never on a command line.
  if (std::getenv(kClusterTokenEnv) == nullptr && !options_.env.count(kClusterTokenEnv)) {
    RW_ASSIGN_OR_RETURN(std::string token, NewClusterToken());
    options_.env[kClusterTokenEnv] = token;
  }
  for (int attempt = 0;; ++attempt) {
    RW_ASSIGN_OR_RETURN(int code, RunGroup(attempt));
    // Elastic: max_restarts restarted single tasks into the running job.
    if (code == 0 || g_signal != 0 || options_.elastic) return code;
    if (attempt >= options_.max_restarts) {
      if (options_.max_restarts > 0) {
        RW_LOG(ERROR) << "giving up after " << options_.max_restarts << " restart"
                      << (options_.max_restarts == 1 ? "" : "s") << " (--max_restarts)";
      }
      return code;
    }
    if (!RestartCouldHelp(code)) {
      RW_LOG(ERROR) << "not restarting: " << first_failure_task_ << "'s exit " << code << " ("
                    << ExitCodeName(code) << ") would happen again";
      return code;
    }
    RW_LOG(WARNING) << "restarting every task (restart " << attempt + 1 << " of "
                    << options_.max_restarts << ") after " << first_failure_task_ << " exited "
                    << code;
  }
}

absl::StatusOr<int> Launcher::RunGroup(int attempt) {
  tasks_.clear();
  if (!options_.timeline.empty()) ClearTimelineParts();
  first_failure_code_ = 0;
  first_failure_task_.clear();
  a_ring_task_succeeded_ = false;
  other_failure_code_ = 0;
  elastic_restarts_ = 0;
  next_backoff_s_ = 1;
  if (options_.command.empty()) {
    return absl::InvalidArgumentError("no program given: launch [flags] -- PROGRAM ARGS...");
  }
  if (::access(options_.command[0].c_str(), X_OK) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot run ", options_.command[0], ": ", std::strerror(errno),
                     " (give a path to the program, e.g. bazel-bin/tools/train)"));
  }
  slots_filled_.clear();
  if (!options_.hosts.empty()) RW_RETURN_IF_ERROR(CheckHosts());
  const bool on_localhost = options_.host_discovery.empty() && options_.hosts.empty();
  absl::StatusOr<ClusterSpec> spec =
      !options_.hosts.empty() ? SpecOnHosts(options_.hosts)
      : on_localhost
          ? LocalhostClusterSpec(options_.num_workers, options_.chief, options_.evaluator)
          : SpecFromDiscoveredHosts();
  if (!spec.ok()) return spec.status();
  struct sigaction action {};
  action.sa_handler = OnSignal;
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  if (on_localhost) {
    for (const TaskId& id : AllTasks(*spec)) {
      Task task;
      task.id = id;
      task.tag = absl::StrCat("[", id.ToString(), "] ");
      tasks_.push_back(std::move(task));
    }
  }
  for (Task& task : tasks_) {
    task.tf_config = ToTfConfigJson(ClusterConfig(*spec, task.id, "launch"));
    absl::Status status = Spawn(task, task.tf_config, attempt);
    if (!status.ok()) return status;
  }
  RW_LOG(INFO) << "started " << tasks_.size() << " tasks of " << options_.command[0];

  enum class Phase { kRunning, kGrace, kTerminated, kKilled } phase = Phase::kRunning;
  Deadline next_step = Deadline::Never();
  int forwarded_signal = 0;
  while (true) {
    std::vector<pollfd> fds;
    std::vector<std::pair<Task*, bool>> owners;  // (task, is stdout)
    for (Task& task : tasks_) {
      if (task.out_fd >= 0) {
        fds.push_back({task.out_fd, POLLIN, 0});
        owners.emplace_back(&task, true);
      }
      if (task.err_fd >= 0) {
        fds.push_back({task.err_fd, POLLIN, 0});
        owners.emplace_back(&task, false);
      }
    }
    // Short timeout: exits are reaped by polling waitpid.
    ::poll(fds.data(), fds.size(), 50);
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Task& task = *owners[i].first;
      if (owners[i].second) {
        Drain(task, task.out_fd, task.out_partial, STDOUT_FILENO);
      } else {
        Drain(task, task.err_fd, task.err_partial, STDERR_FILENO);
      }
    }
    Reap();
    RestartDueTasks();
    if (!options_.host_discovery.empty() && g_signal == 0) PollHosts();
    if (g_signal != 0 && forwarded_signal == 0) {
      forwarded_signal = g_signal;
      RW_LOG(WARNING) << "got signal " << forwarded_signal << "; passing it to every task";
      for (Task& task : tasks_) {
        if (!task.exited) Signal(task, forwarded_signal);
      }
      if (phase == Phase::kRunning) {
        phase = Phase::kGrace;
        next_step = Deadline::AfterSeconds(options_.grace_s);
      }
    }
    bool all_exited = true;
    for (const Task& task : tasks_) all_exited = all_exited && task.exited && !task.restart_pending;
    if (all_exited) {
      // Collect output written just before exit, without waiting for processes the
      // tasks left behind (they may hold the pipes open).
      for (Task& task : tasks_) {
        for (int* fd : {&task.out_fd, &task.err_fd}) {
          std::string& partial = fd == &task.out_fd ? task.out_partial : task.err_partial;
          const int target = fd == &task.out_fd ? STDOUT_FILENO : STDERR_FILENO;
          while (*fd >= 0) {
            pollfd p{*fd, POLLIN, 0};
            if (::poll(&p, 1, 100) <= 0) {
              if (!partial.empty()) WriteAll(target, task.tag + partial + "\n");
              ::close(*fd);
              *fd = -1;
              break;
            }
            Drain(task, *fd, partial, target);
          }
        }
        if (task.pid > 0) ::kill(-task.pid, SIGKILL);  // Whatever the task left running here.
      }
      break;
    }
    if (phase == Phase::kRunning && !first_failure_task_.empty() && !options_.elastic) {
      phase = Phase::kGrace;
      next_step = Deadline::AfterSeconds(options_.grace_s);
    }
    if (next_step.Expired()) {
      const bool terminate = phase == Phase::kGrace;
      for (Task& task : tasks_) {
        if (task.exited) continue;
        RW_LOG(WARNING) << "stopping " << task.id.ToString() << " with "
                        << (terminate ? "SIGTERM" : "SIGKILL");
        Signal(task, terminate ? SIGTERM : SIGKILL);
      }
      phase = terminate ? Phase::kTerminated : Phase::kKilled;
      next_step = terminate ? Deadline::AfterSeconds(options_.kill_s) : Deadline::Never();
    }
  }
  WaitForSignalHelpers(options_.kill_s + 10);
  if (forwarded_signal != 0) {
    return first_failure_task_.empty() ? 128 + forwarded_signal : first_failure_code_;
  }
  if (options_.elastic && a_ring_task_succeeded_ && other_failure_code_ == 0) {
    if (!first_failure_task_.empty()) {
      RW_LOG(INFO) << "--elastic: the job succeeded without the tasks that failed (first: "
                   << first_failure_task_ << ", exit " << first_failure_code_ << ")";
    }
    return 0;
  }
  if (options_.elastic && other_failure_code_ != 0) return other_failure_code_;
  if (!first_failure_task_.empty()) return first_failure_code_;
  return 0;
}

}  // namespace ringwork
