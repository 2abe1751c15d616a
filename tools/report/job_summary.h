// What a report shows of one job, read from the files a run leaves: train's
// --metrics_json, TensorBoard's event files (DIR/train, DIR/validation) and a merged
// timeline (launch --timeline). Each input is optional; what is missing is said.
//
//   absl::StatusOr<JobSummary> job = LoadJobSummary({.metrics_json = "m.json",
//                                                    .tensorboard_dir = "tb",
//                                                    .timeline = "t.json"});
#ifndef RINGWORK_TOOLS_REPORT_JOB_SUMMARY_H_
#define RINGWORK_TOOLS_REPORT_JOB_SUMMARY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "observability/event_file.h"

namespace ringwork {

struct ReportInputs {
  std::string metrics_json;
  std::string tensorboard_dir;
  std::string timeline;
};

struct AllReduceRow {
  int64_t bytes = 0;      // Per rank.
  std::string algorithm;  // "ring", "recursive_doubling"
  std::string links;      // "shm", "grpc", "shm+grpc"
  int64_t count = 0;      // Over every task.
  double median_us = 0;
  double p90_us = 0;
  double total_ms = 0;
};

struct TaskRow {
  std::string task;  // "worker:1"
  int rank = 0;
  int64_t clock_offset_us = 0;
  int64_t clock_offset_rtt_us = -1;
  std::string clock;  // Which clock the merge used for its events.
  int64_t events = 0;
  int64_t dropped_events = 0;
  int64_t steps = 0;  // "step" spans in the timeline.
  double median_step_ms = 0;
  double wait_ms_per_step = 0;  // In collectives inside steps: waiting for peers and moving data.
};

struct JobSummary {
  nlohmann::json metrics;  // null when not given.
  ScalarCurves train;      // tag -> step -> value
  ScalarCurves validation;
  std::vector<AllReduceRow> allreduce;
  std::vector<TaskRow> tasks;
  std::vector<std::string> notes;  // Inputs that were not given or held nothing.
};

// Errors name the file: unreadable or invalid JSON, an event file with a bad CRC.
absl::StatusOr<JobSummary> LoadJobSummary(const ReportInputs& inputs);

}  // namespace ringwork

#endif  // RINGWORK_TOOLS_REPORT_JOB_SUMMARY_H_
