// Runs a program as a child process and collects what it printed, for tests of our
// binaries and localhost clusters. Every run has a deadline; a child that outlives
// it is killed (SIGKILL) and reported as timed out.
//
//   Subprocess::Options options;
//   options.env["TF_CONFIG"] = "{...}";
//   options.timeout_s = 10;
//   SubprocessResult r = RunSubprocess({"tools/tfconfig", "validate"}, options);
//   CHECK(r.exit_code == 2);
//   CHECK(r.output.find("TF_CONFIG.task") != std::string::npos);
//
// Async use (several workers at once): Subprocess p = Subprocess::Start(...);
// p.Kill(SIGKILL); SubprocessResult r = p.Wait();
#ifndef RINGWORK_TESTING_SUBPROCESS_H_
#define RINGWORK_TESTING_SUBPROCESS_H_

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace ringwork {

struct SubprocessResult {
  int exit_code = -1;      // The exit status, or 128 + signal when killed.
  bool timed_out = false;  // Killed because the deadline passed.
  std::string output;      // stdout and stderr, interleaved as written.
  double elapsed_s = 0;
};

class Subprocess {
 public:
  struct Options {
    std::map<std::string, std::string> env;  // Added to (or replacing) the parent's.
    std::vector<std::string> unset_env;      // Removed from the child's environment.
    double timeout_s = 60;
  };

  // Starts `argv` with stdout and stderr captured together. Aborts the test on
  // fork/pipe failure (a broken machine, not a test outcome).
  static Subprocess Start(const std::vector<std::string>& argv, const Options& options);

  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&&) = delete;
  Subprocess(const Subprocess&) = delete;
  ~Subprocess();  // Kills and reaps the child if Wait() was not called.

  pid_t pid() const { return pid_; }
  void Signal(int signal);
  // Reads output until the child exits or the deadline passes, then reaps it.
  SubprocessResult Wait();

 private:
  Subprocess() = default;
  pid_t pid_ = -1;
  int output_fd_ = -1;
  double timeout_s_ = 0;
  double start_s_ = 0;
};

SubprocessResult RunSubprocess(const std::vector<std::string>& argv,
                               const Subprocess::Options& options);

// Seconds on a monotonic clock.
double MonotonicSeconds();

}  // namespace ringwork

#endif  // RINGWORK_TESTING_SUBPROCESS_H_
