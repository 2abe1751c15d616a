#include "tools/report/job_summary.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace ringwork {
namespace {

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

absl::StatusOr<nlohmann::json> ReadJson(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in)
    return absl::NotFoundError(
        absl::StrCat(what, " ", path, ": cannot open: ", std::strerror(errno)));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", path, ": not a JSON object"));
  }
  return j;
}

// A number from an event's args, or `fallback`.
double ArgNumber(const nlohmann::json& e, const char* key, double fallback) {
  if (!e.contains("args") || !e["args"].is_object()) return fallback;
  const nlohmann::json& args = e["args"];
  return args.contains(key) && args[key].is_number() ? args[key].get<double>() : fallback;
}

std::string ArgText(const nlohmann::json& e, const char* key) {
  if (!e.contains("args") || !e["args"].is_object()) return "";
  const nlohmann::json& args = e["args"];
  return args.contains(key) && args[key].is_string() ? args[key].get<std::string>() : "";
}

absl::Status LoadTimeline(const std::string& path, JobSummary* job) {
  absl::StatusOr<nlohmann::json> trace = ReadJson(path, "timeline");
  if (!trace.ok()) return trace.status();
  if (!trace->contains("traceEvents") || !(*trace)["traceEvents"].is_array()) {
    return absl::InvalidArgumentError(absl::StrCat("timeline ", path, ": no traceEvents list"));
  }
  std::map<std::tuple<int64_t, std::string, std::string>, std::vector<double>> allreduce_us;
  std::map<int, TaskRow> tasks;
  std::map<int, std::vector<double>> step_ms;
  std::map<int, std::vector<std::pair<double, double>>> steps_us;          // pid -> (start, end)
  std::map<int, std::vector<std::pair<double, double>>> collective_waits;  // pid -> (ts, waited_us)
  for (const nlohmann::json& e : (*trace)["traceEvents"]) {
    if (!e.is_object() || !e.contains("pid") || !e["pid"].is_number_integer()) continue;
    const int pid = e["pid"].get<int>();
    const std::string ph = e.value("ph", "");
    const std::string name = e.value("name", "");
    if (ph == "M" && name == "process_name") {
      tasks[pid].rank = pid;
      tasks[pid].task = ArgText(e, "name");
      continue;
    }
    if (ph != "X" || !e.contains("dur") || !e["dur"].is_number()) continue;
    const double dur_us = e["dur"].get<double>();
    const std::string cat = e.value("cat", "");
    const double ts_us = e.contains("ts") && e["ts"].is_number() ? e["ts"].get<double>() : 0;
    if (cat == "step" && name.rfind("step", 0) == 0) {
      step_ms[pid].push_back(dur_us / 1000);
      steps_us[pid].emplace_back(ts_us, ts_us + dur_us);
    }
    if (cat == "collective")
      collective_waits[pid].emplace_back(ts_us, ArgNumber(e, "waited_us", 0));
    if (cat == "collective" && name == "allreduce") {
      allreduce_us[{static_cast<int64_t>(ArgNumber(e, "bytes", 0)), ArgText(e, "algorithm"),
                    ArgText(e, "links")}]
          .push_back(dur_us);
    }
  }
  if (trace->contains("otherData") && (*trace)["otherData"].is_object() &&
      (*trace)["otherData"].contains("tasks") && (*trace)["otherData"]["tasks"].is_array()) {
    for (const nlohmann::json& t : (*trace)["otherData"]["tasks"]) {
      if (!t.is_object() || !t.contains("rank") || !t["rank"].is_number_integer()) continue;
      TaskRow& row = tasks[t["rank"].get<int>()];
      row.rank = t["rank"].get<int>();
      if (t.contains("task") && t["task"].is_string()) row.task = t["task"].get<std::string>();
      row.clock_offset_us = t.value("clock_offset_us", int64_t{0});
      row.clock_offset_rtt_us = t.value("clock_offset_rtt_us", int64_t{-1});
      row.clock =
          t.contains("clock") && t["clock"].is_string() ? t["clock"].get<std::string>() : "";
      row.events = t.value("events", int64_t{0});
      row.dropped_events = t.value("dropped_events", int64_t{0});
    }
  }
  for (auto& [rank, row] : tasks) {
    const std::vector<double>& steps = step_ms[rank];
    row.steps = static_cast<int64_t>(steps.size());
    row.median_step_ms = Quantile(steps, 0.5);
    // Per step: only collectives inside a recorded step (not the startup broadcast,
    // nor the end-of-epoch metrics outside the window).
    std::vector<std::pair<double, double>>& intervals = steps_us[rank];
    std::sort(intervals.begin(), intervals.end());
    double waited_in_steps_us = 0;
    for (const auto& [ts, waited] : collective_waits[rank]) {
      auto after = std::upper_bound(intervals.begin(), intervals.end(),
                                    std::make_pair(ts, std::numeric_limits<double>::max()));
      if (after != intervals.begin() && ts <= std::prev(after)->second)
        waited_in_steps_us += waited;
    }
    row.wait_ms_per_step =
        steps.empty() ? 0 : waited_in_steps_us / 1000 / static_cast<double>(steps.size());
    job->tasks.push_back(row);
  }
  for (const auto& [key, durations] : allreduce_us) {
    AllReduceRow row;
    std::tie(row.bytes, row.algorithm, row.links) = key;
    row.count = static_cast<int64_t>(durations.size());
    row.median_us = Quantile(durations, 0.5);
    row.p90_us = Quantile(durations, 0.9);
    for (double d : durations) row.total_ms += d / 1000;
    job->allreduce.push_back(row);
  }
  std::sort(job->allreduce.begin(), job->allreduce.end(),
            [](const AllReduceRow& a, const AllReduceRow& b) { return a.total_ms > b.total_ms; });
  if (job->tasks.empty())
    job->notes.push_back(absl::StrCat("the timeline ", path, " holds no task"));
  return absl::OkStatus();
}

absl::StatusOr<JobSummary> LoadJobSummaryOrThrow(const ReportInputs& inputs);

}  // namespace

absl::StatusOr<JobSummary> LoadJobSummary(const ReportInputs& inputs) {
  // The one place nlohmann's exceptions (a field of the wrong type) become a status.
  try {
    return LoadJobSummaryOrThrow(inputs);
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("report inputs (", inputs.metrics_json, " ",
                                                   inputs.timeline, "): ", e.what()));
  }
}

namespace {

absl::StatusOr<JobSummary> LoadJobSummaryOrThrow(const ReportInputs& inputs) {
  JobSummary job;
  if (inputs.metrics_json.empty()) {
    job.notes.push_back("no --metrics_json: no summary, step breakdown or test accuracy");
  } else {
    absl::StatusOr<nlohmann::json> metrics = ReadJson(inputs.metrics_json, "metrics");
    if (absl::IsNotFound(metrics.status())) {
      job.notes.push_back(absl::StrCat(metrics.status().message(),
                                       ": no summary, step breakdown or test accuracy"));
    } else if (!metrics.ok()) {
      return metrics.status();
    } else {
      job.metrics = *std::move(metrics);
    }
  }
  if (inputs.tensorboard_dir.empty()) {
    job.notes.push_back("no --tensorboard_dir: no curves");
  } else {
    for (auto [sub, curves] : {std::pair{"/train", &job.train}, {"/validation", &job.validation}}) {
      absl::StatusOr<ScalarCurves> read = ReadScalarCurves(inputs.tensorboard_dir + sub);
      if (read.ok()) {
        *curves = *std::move(read);
      } else if (absl::IsNotFound(read.status())) {
        job.notes.push_back(absl::StrCat("no event files in ", inputs.tensorboard_dir, sub));
      } else {
        return read.status();
      }
    }
  }
  if (inputs.timeline.empty()) {
    job.notes.push_back("no --timeline: no all-reduce or task table");
  } else {
    absl::Status loaded = LoadTimeline(inputs.timeline, &job);
    if (absl::IsNotFound(loaded)) {
      job.notes.push_back(absl::StrCat(loaded.message(), ": no all-reduce or task table"));
    } else if (!loaded.ok()) {
      return loaded;
    }
  }
  if (job.metrics.is_null() && job.train.empty() && job.validation.empty() && job.tasks.empty()) {
    return absl::NotFoundError(absl::StrCat("nothing to report: ", absl::StrJoin(job.notes, "; ")));
  }
  return job;
}

}  // namespace

}  // namespace ringwork
