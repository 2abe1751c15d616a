// What a streamed input pipeline did each epoch, and one warning when it held
// training up: Fit's view of PipelineStats.
//
//   InputReport report;
//   RW_RETURN_IF_ERROR(stream->StartPass(epoch, 0, report.StartPass()));
//   ... the epoch's steps ...
//   RW_RETURN_IF_ERROR(report.EndEpoch(strategy, &logs));  // After the step breakdown.
//
// EndEpoch adds to the epoch's logs (timing logs: TensorBoard writes them, the
// progress bar does not show them):
//   input_pipeline/skipped            records skipped as bad (ignore_errors), over
//                                     every worker (one all-reduce: a collective);
//   input_pipeline/S/busy             stage S's share of its threads' time in its
//                                     own work (a Map's function), this worker's;
//   input_pipeline/S/upstream         its reader's share of time in the stage
//                                     before (for the first: reading the source);
//   input_pipeline/S/buffer_fill      how full its buffer was when asked (0..1);
// S is "I_NAME_xT": the stage's place from the source (1, 2, ...), its name
// ("decode", "parse") and threads. When step_breakdown/data_wait is over 1/5 of
// the step, the first time, a warning names the stage that held training up and
// the setting that would help.
#ifndef RINGWORK_KERAS_INPUT_REPORT_H_
#define RINGWORK_KERAS_INPUT_REPORT_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "data/pipeline/pipeline_stats.h"
#include "keras/callbacks.h"
#include "strategy/multi_worker_mirrored_strategy.h"

namespace ringwork {

inline constexpr char kInputSkipped[] = "input_pipeline/skipped";
inline constexpr double kInputWarnDataWait = 0.2;

class InputReport {
 public:
  // The stats the next pass counts into (the previous pass's stay alive until
  // the call after: its iterator ends inside StartPass).
  PipelineStats* StartPass();
  // The current pass's stats, for its reader rebuilt in the middle (a regroup):
  // the epoch's figures go on.
  PipelineStats* ContinuePass();
  absl::Status EndEpoch(MultiWorkerMirroredStrategy* strategy, Logs* logs);
  // The warning's text for an epoch's figures, or "" when data wait is small.
  static std::string Diagnose(const std::vector<PipelineStats::StageSnapshot>& stages,
                              double wall_s, double data_wait, int cores);

 private:
  std::unique_ptr<PipelineStats> current_, previous_;
  // Since the last epoch's end, or the pass's start: a pass that spans epochs
  // (steps_per_epoch) is reported epoch by epoch.
  std::chrono::steady_clock::time_point since_;
  std::vector<PipelineStats::StageSnapshot> reported_;  // Of current_, at the last end.
  int64_t reported_skipped_ = 0;
  bool warned_ = false;
};

}  // namespace ringwork

#endif  // RINGWORK_KERAS_INPUT_REPORT_H_
