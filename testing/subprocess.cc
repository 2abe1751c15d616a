#include "testing/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

extern char** environ;

namespace ringwork {

double MonotonicSeconds() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec + now.tv_nsec * 1e-9;
}

Subprocess Subprocess::Start(const std::vector<std::string>& argv, const Options& options) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    std::perror("pipe2");
    std::abort();
  }
  // Build the child's environment before fork: only async-signal-safe calls after.
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr) env[std::string(*e, eq - *e)] = eq + 1;
  }
  for (const auto& name : options.unset_env) env.erase(name);
  for (const auto& [name, value] : options.env) env[name] = value;
  std::vector<std::string> env_strings;
  for (const auto& [name, value] : env) env_strings.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argvp;
  for (auto& s : args) argvp.push_back(s.data());
  argvp.push_back(nullptr);

  Subprocess process;
  process.timeout_s_ = options.timeout_s;
  process.start_s_ = MonotonicSeconds();
  process.pid_ = ::fork();
  if (process.pid_ < 0) {
    std::perror("fork");
    std::abort();
  }
  if (process.pid_ == 0) {
    ::setpgid(0, 0);  // Its own process group, so Signal() reaches its children.
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::execve(argvp[0], argvp.data(), envp.data());
    const char message[] = "exec failed\n";
    (void)!::write(STDERR_FILENO, message, sizeof(message) - 1);
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  process.output_fd_ = pipe_fds[0];
  return process;
}

Subprocess::Subprocess(Subprocess&& other) noexcept
    : pid_(other.pid_),
      output_fd_(other.output_fd_),
      timeout_s_(other.timeout_s_),
      start_s_(other.start_s_) {
  other.pid_ = -1;
  other.output_fd_ = -1;
}

Subprocess::~Subprocess() {
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    int status;
    ::waitpid(pid_, &status, 0);
  }
  if (output_fd_ >= 0) ::close(output_fd_);
}

void Subprocess::Signal(int signal) {
  if (pid_ > 0) ::kill(pid_, signal);
}

SubprocessResult Subprocess::Wait() {
  SubprocessResult result;
  const double deadline = start_s_ + timeout_s_;
  char buffer[4096];
  bool open = true;
  while (open) {
    const double left = deadline - MonotonicSeconds();
    if (left <= 0) {
      result.timed_out = true;
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
      break;
    }
    pollfd fd{output_fd_, POLLIN, 0};
    const int ready = ::poll(&fd, 1, static_cast<int>(left * 1000) + 1);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t n = ::read(output_fd_, buffer, sizeof(buffer));
    if (n > 0) {
      result.output.append(buffer, n);
    } else if (n == 0 || errno != EINTR) {
      open = false;  // Every writer closed: the child (and its children) are gone.
    }
  }
  int status = 0;
  // The pipe can close before the child is reaped; wait with the same deadline.
  while (true) {
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) break;
    if (MonotonicSeconds() > deadline + 5) {
      result.timed_out = true;
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    ::usleep(1000);
  }
  pid_ = -1;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.elapsed_s = MonotonicSeconds() - start_s_;
  return result;
}

SubprocessResult RunSubprocess(const std::vector<std::string>& argv,
                               const Subprocess::Options& options) {
  return Subprocess::Start(argv, options).Wait();
}

}  // namespace ringwork
