// TensorBoard's event files: a TFRecord file (record_file.h) of `Event` messages,
// the first one `file_version: "brain.Event:2"`, then summaries (scalars,
// histograms), written by field number as TensorBoard's protos define them:
//
//   Event   { double wall_time = 1; int64 step = 2; string file_version = 3;
//             Summary summary = 5; }
//   Summary { repeated Value value = 1; }
//   Value   { string tag = 1; float simple_value = 2; HistogramProto histo = 5; }
//   HistogramProto { double min = 1, max = 2, num = 3, sum = 4, sum_squares = 5;
//                    repeated double bucket_limit = 6 [packed], bucket = 7 [packed]; }
//
//   RW_ASSIGN_OR_RETURN(auto writer, EventFileWriter::Create("/logs/train"));
//   RW_RETURN_IF_ERROR(writer->WriteScalar("epoch_loss", 0, 0.52f));
//   // TensorBoard sees each event as soon as it is written.
//
// A writer makes its own file, events.out.tfevents.<seconds>.<host>.<pid>.v2, in
// `dir` (another writer of this process in the same second adds ".<n>" before
// ".v2"): a resumed job adds a file and never rewrites what an earlier run wrote.
#ifndef RINGWORK_OBSERVABILITY_EVENT_FILE_H_
#define RINGWORK_OBSERVABILITY_EVENT_FILE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "io/record_file.h"

namespace ringwork {

struct Histogram {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> bucket_limit;  // Each bucket's right edge.
  std::vector<double> bucket;        // Its count.
  // `buckets` (at least 1) equal-width buckets between the smallest and largest
  // finite value; NaN and infinities are left out (num counts the finite values).
  // All values equal: one bucket.
  static Histogram Of(const float* values, size_t count, int buckets = 30);
};

struct EventRecord {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;
  std::vector<std::pair<std::string, float>> scalars;
  std::vector<std::pair<std::string, Histogram>> histograms;
};

class EventFileWriter {
 public:
  // Creates `dir` if needed and a new event file in it.
  static absl::StatusOr<std::unique_ptr<EventFileWriter>> Create(const std::string& dir);

  absl::Status WriteScalar(const std::string& tag, int64_t step, float value);
  absl::Status WriteHistogram(const std::string& tag, int64_t step, const Histogram& histogram);
  const std::string& path() const { return records_->path(); }

 private:
  explicit EventFileWriter(std::unique_ptr<RecordWriter> records) : records_(std::move(records)) {}
  absl::Status WriteEvent(int64_t step, const std::string& summary);
  std::unique_ptr<RecordWriter> records_;
};

// The events of one file, every record's CRCs checked and every event decoded
// (DATA_LOSS otherwise); `cut_tail` as in ReadRecords.
absl::StatusOr<std::vector<EventRecord>> ReadEventFile(const std::string& path,
                                                       CutTail cut_tail = CutTail::kRefuse);
// The event files in `dir`, oldest first (by the seconds in their names).
std::vector<std::string> EventFiles(const std::string& dir);
// tag -> step -> value of every scalar in every event file of `dir`, as
// TensorBoard shows them: files in the order they were started (their first
// event's wall time), a later file's value winning at a step both hold (as after a
// resume), a record cut at a file's end ignored (a job still writing, or killed).
// DATA_LOSS for a CRC mismatch or a file that does not open with its version;
// NOT_FOUND when `dir` has no event file.
using ScalarCurves = std::map<std::string, std::map<int64_t, float>>;
absl::StatusOr<ScalarCurves> ReadScalarCurves(const std::string& dir);

}  // namespace ringwork

#endif  // RINGWORK_OBSERVABILITY_EVENT_FILE_H_
