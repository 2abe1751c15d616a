#include "base/logging.h"

#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

namespace ringwork {
namespace {

int InitialVerbosity() {
  const char* env = std::getenv("RINGWORK_VERBOSITY");
  return env ? std::atoi(env) : 0;
}

bool TagEnabled() {
  const char* env = std::getenv("RINGWORK_LOG_TASK_TAG");
  return env == nullptr || std::strcmp(env, "0") != 0;
}

struct LogState {
  std::mutex mu;
  std::string task;                              // Guarded by mu.
  std::function<void(const std::string&)> sink;  // Guarded by mu.
  std::atomic<int> verbosity{InitialVerbosity()};
  bool tag_enabled = TagEnabled();
};

LogState& State() {
  static LogState* state = new LogState();  // Never destroyed: logging at exit is safe.
  return *state;
}

char SeverityLetter(LogSeverity severity) {
  switch (severity) {
    case LogSeverity::kInfo:
      return 'I';
    case LogSeverity::kWarning:
      return 'W';
    case LogSeverity::kError:
      return 'E';
    case LogSeverity::kFatal:
      return 'F';
  }
  return '?';
}

const char* Basename(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

}  // namespace

void SetLogTask(absl::string_view task) {
  std::lock_guard<std::mutex> lock(State().mu);
  State().task = std::string(task);
}

std::string LogTask() {
  std::lock_guard<std::mutex> lock(State().mu);
  return State().task;
}

void SetLogVerbosity(int level) { State().verbosity.store(level); }
int LogVerbosity() { return State().verbosity.load(std::memory_order_relaxed); }

void SetLogSinkForTest(std::function<void(const std::string& line)> sink) {
  std::lock_guard<std::mutex> lock(State().mu);
  State().sink = std::move(sink);
}

namespace logging_internal {

LogMessage::LogMessage(LogSeverity severity, const char* file, int line) : severity_(severity) {
  LogState& state = State();
  std::string task;
  {
    std::lock_guard<std::mutex> lock(state.mu);
    task = state.task;
  }
  if (state.tag_enabled && !task.empty()) stream_ << '[' << task << "] ";
  timeval now;
  gettimeofday(&now, nullptr);
  tm local;
  localtime_r(&now.tv_sec, &local);
  char time_text[32];
  std::snprintf(time_text, sizeof(time_text), "%02d:%02d:%02d.%03d", local.tm_hour, local.tm_min,
                local.tm_sec, static_cast<int>(now.tv_usec / 1000));
  stream_ << SeverityLetter(severity) << ' ' << time_text << ' ' << Basename(file) << ':' << line
          << "] ";
}

LogMessage::~LogMessage() {
  stream_ << '\n';
  const std::string text = stream_.str();
  LogState& state = State();
  std::function<void(const std::string&)> sink;
  {
    std::lock_guard<std::mutex> lock(state.mu);
    sink = state.sink;
  }
  if (sink) {
    sink(text);
  } else {
    size_t written = 0;
    while (written < text.size()) {
      ssize_t n = ::write(STDERR_FILENO, text.data() + written, text.size() - written);
      if (n <= 0) break;
      written += static_cast<size_t>(n);
    }
  }
  if (severity_ == LogSeverity::kFatal) std::abort();
}

}  // namespace logging_internal
}  // namespace ringwork
