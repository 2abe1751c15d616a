#include "observability/timeline_merge.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/atomic_file.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"

namespace ringwork {
namespace {

absl::Status NotATimeline(const std::string& path, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("timeline ", path, ": ", why));
}

struct TaskTimeline {
  std::string path;
  nlohmann::json file;
  int64_t earliest = std::numeric_limits<int64_t>::max();  // On its own clock.
};

// Reads and checks one task's file; nlohmann's exceptions (a field of the wrong
// type) become a status naming the file.
absl::Status ReadTaskTimeline(const std::string& path, TaskTimeline* task) {
  try {
    std::ifstream in(path);
    if (!in) return NotATimeline(path, absl::StrCat("cannot read: ", std::strerror(errno)));
    task->path = path;
    task->file = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    nlohmann::json& file = task->file;
    if (file.is_discarded()) return NotATimeline(path, "not valid JSON");
    if (!file.is_object() || !file.contains("traceEvents") || !file["traceEvents"].is_array() ||
        !file.contains("otherData") || !file["otherData"].is_object()) {
      return NotATimeline(path, "no traceEvents list and otherData object");
    }
    const nlohmann::json& other = file["otherData"];
    for (const char* key : {"rank", "clock_offset_us", "clock_offset_rtt_us"}) {
      if (other.contains(key) && !other[key].is_number_integer()) {
        return NotATimeline(path, absl::StrCat(key, " is not an integer"));
      }
    }
    for (const char* key : {"host", "clock_domain", "task"}) {
      if (other.contains(key) && !other[key].is_string()) {
        return NotATimeline(path, absl::StrCat(key, " is not a string"));
      }
    }
    for (const nlohmann::json& e : file["traceEvents"]) {
      if (!e.is_object()) return NotATimeline(path, "an event is not an object");
      if (!e.contains("ts")) continue;
      if (!e["ts"].is_number_integer())
        return NotATimeline(path, "an event's ts is not an integer");
      task->earliest = std::min(task->earliest, e["ts"].get<int64_t>());
    }
  } catch (const nlohmann::json::exception& e) {
    return NotATimeline(path, e.what());
  }
  return absl::OkStatus();
}

// The clock a task read: its kernel's boot_id (older files: its host name).
std::string ClockDomain(const nlohmann::json& other) {
  const std::string domain = other.value("clock_domain", "");
  return domain.empty() ? other.value("host", "") : domain;
}

}  // namespace

absl::StatusOr<TimelineMergeResult> MergeTimelines(const std::vector<std::string>& inputs,
                                                   const std::string& output) {
  TimelineMergeResult result;
  std::vector<TaskTimeline> timelines;
  for (const std::string& path : inputs) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0 && errno == ENOENT) {
      result.missing.push_back(path);
      continue;
    }
    TaskTimeline task;
    if (absl::Status read = ReadTaskTimeline(path, &task); !read.ok()) return read;
    timelines.push_back(std::move(task));
  }
  if (timelines.empty()) {
    return absl::NotFoundError(absl::StrCat("no task wrote a timeline (looked for ", inputs.size(),
                                            " files, e.g. ", inputs.empty() ? "none" : inputs[0],
                                            ")"));
  }
  // Tasks under the chief's kernel read its CLOCK_MONOTONIC: no estimate needed.
  // Others carry an estimated offset; one without (it never heard the chief) is
  // placed so that its first event is at the job's start, and said so.
  std::string chief_clock;
  for (const TaskTimeline& t : timelines) {
    const nlohmann::json& other = t.file["otherData"];
    if (other.value("rank", -1) == 0) chief_clock = ClockDomain(other);
  }
  enum class Clock { kChiefs, kEstimated, kUnknown };
  std::vector<Clock> clocks;
  int64_t earliest = std::numeric_limits<int64_t>::max();  // On the chief's clock.
  for (const TaskTimeline& t : timelines) {
    const nlohmann::json& other = t.file["otherData"];
    Clock kind = Clock::kUnknown;
    if (!chief_clock.empty() && ClockDomain(other) == chief_clock) {
      kind = Clock::kChiefs;
    } else if (other.value("clock_offset_rtt_us", int64_t{-1}) >= 0) {
      kind = Clock::kEstimated;
    }
    clocks.push_back(kind);
    if (kind == Clock::kUnknown || t.earliest == std::numeric_limits<int64_t>::max()) continue;
    const int64_t shift = kind == Clock::kChiefs ? 0 : other.value("clock_offset_us", int64_t{0});
    earliest = std::min(earliest, t.earliest + shift);
  }
  if (earliest == std::numeric_limits<int64_t>::max()) earliest = 0;
  nlohmann::json events = nlohmann::json::array();
  nlohmann::json tasks = nlohmann::json::array();
  for (size_t i = 0; i < timelines.size(); ++i) {
    TaskTimeline& t = timelines[i];
    nlohmann::json task = t.file["otherData"];
    int64_t shift = 0;  // Onto the chief's clock, then so that the job starts at 0.
    const char* clock = "";
    switch (clocks[i]) {
      case Clock::kChiefs:
        shift = -earliest;
        clock = "the chief's (same kernel)";
        break;
      case Clock::kEstimated:
        shift = task.value("clock_offset_us", int64_t{0}) - earliest;
        clock = "estimated offset to the chief's";
        break;
      case Clock::kUnknown:
        shift = t.earliest == std::numeric_limits<int64_t>::max() ? 0 : -t.earliest;
        clock = "unknown (no estimate against the chief's): first event placed at 0";
        result.unaligned.push_back(t.path);
        break;
    }
    for (nlohmann::json& e : t.file["traceEvents"]) {
      if (e.contains("ts")) e["ts"] = e["ts"].get<int64_t>() + shift;
      events.push_back(std::move(e));
    }
    task["file"] = t.path;
    task["applied_shift_us"] = shift;
    task["clock"] = clock;
    tasks.push_back(std::move(task));
  }
  result.tasks = static_cast<int>(timelines.size());
  result.events = static_cast<int64_t>(events.size());
  nlohmann::json merged = {
      {"displayTimeUnit", "ms"},
      {"otherData",
       {{"tasks", tasks}, {"missing", result.missing}, {"time_zero_us_on_chief_clock", earliest}}},
      {"traceEvents", std::move(events)}};
  RW_RETURN_IF_ERROR(WriteFileAtomically(
      output, merged.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
      "timeline"));
  return result;
}

}  // namespace ringwork
