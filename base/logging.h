// One levelled logging facility for all of Ringwork. Every line carries the task
// it comes from, so interleaved output of a cluster stays readable:
//
//   ringwork::SetLogTask("worker:1");
//   RW_LOG(INFO) << "joined " << n << " peers";
//   RW_VLOG(2) << "chunk " << i << " sent";   // shown when verbosity >= 2
//
// prints  "[worker:1] I 10:17:34.123 rendezvous.cc:88] joined 3 peers"  on stderr.
//
// Verbosity comes from the RINGWORK_VERBOSITY environment variable (default 0) or
// SetLogVerbosity(). RINGWORK_LOG_TASK_TAG=0 drops the "[task]" prefix (launch sets
// it, because launch prefixes every line itself). Thread-safe: each line is written
// with a single write(2).
#ifndef RINGWORK_BASE_LOGGING_H_
#define RINGWORK_BASE_LOGGING_H_

#include <functional>
#include <sstream>
#include <string>

#include "absl/strings/string_view.h"

namespace ringwork {

enum class LogSeverity { kInfo, kWarning, kError, kFatal };

// The task tag printed on every line ("worker:1", "chief:0", "launch").
void SetLogTask(absl::string_view task);
std::string LogTask();

void SetLogVerbosity(int level);
int LogVerbosity();

// Replaces the output (stderr) with `sink` until called with nullptr. For tests
// that assert on what was logged.
void SetLogSinkForTest(std::function<void(const std::string& line)> sink);

namespace logging_internal {

class LogMessage {
 public:
  LogMessage(LogSeverity severity, const char* file, int line);
  ~LogMessage();  // Emits the line; aborts for kFatal.
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  std::ostream& stream() { return stream_; }

 private:
  LogSeverity severity_;
  std::ostringstream stream_;
};

// Lets RW_LOG be used in expressions like `cond ? (void)0 : RW_LOG(...) << x`.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace logging_internal
}  // namespace ringwork

#define RW_LOG_SEVERITY_INFO ::ringwork::LogSeverity::kInfo
#define RW_LOG_SEVERITY_WARNING ::ringwork::LogSeverity::kWarning
#define RW_LOG_SEVERITY_ERROR ::ringwork::LogSeverity::kError
#define RW_LOG_SEVERITY_FATAL ::ringwork::LogSeverity::kFatal

#define RW_LOG(severity) \
  ::ringwork::logging_internal::LogMessage(RW_LOG_SEVERITY_##severity, __FILE__, __LINE__).stream()

#define RW_VLOG(level)                             \
  (::ringwork::LogVerbosity() < (level)) ? (void)0 \
                                         : ::ringwork::logging_internal::Voidify() & RW_LOG(INFO)

#endif  // RINGWORK_BASE_LOGGING_H_
