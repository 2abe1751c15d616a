// Merges the timelines of a job's tasks (Timeline::WriteJson files) into one
// Chrome trace: one process row per task, every timestamp moved onto the chief's
// clock (same kernel: as is; another: by the offset the file records), then
// shifted so that the job starts at 0.
//
//   absl::StatusOr<TimelineMergeResult> merged =
//       MergeTimelines({"/tmp/t/worker:0.json", "/tmp/t/worker:1.json"}, "/tmp/job.json");
//   // merged->tasks: 2; merged->missing: files that did not exist (a task that
//   // wrote none, e.g. it was killed).
#ifndef RINGWORK_OBSERVABILITY_TIMELINE_MERGE_H_
#define RINGWORK_OBSERVABILITY_TIMELINE_MERGE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ringwork {

struct TimelineMergeResult {
  int tasks = 0;                     // Files merged.
  int64_t events = 0;                // Trace events written (metadata included).
  std::vector<std::string> missing;  // Inputs that did not exist.
  // Inputs on another kernel's clock with no offset estimate: their first event is
  // placed at the job's start.
  std::vector<std::string> unaligned;
};

// Fails when no input exists, or one that exists is not a timeline (naming it).
absl::StatusOr<TimelineMergeResult> MergeTimelines(const std::vector<std::string>& inputs,
                                                   const std::string& output);

}  // namespace ringwork

#endif  // RINGWORK_OBSERVABILITY_TIMELINE_MERGE_H_
