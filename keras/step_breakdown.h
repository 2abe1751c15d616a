// Where a training step's time goes, per epoch, over every worker: the figure
// that tells whether more workers help.
//
//   StepBreakdown breakdown;
//   ... each step: breakdown.AddStep(step_s, data_wait_s, metrics_reduce_s);
//   RW_RETURN_IF_ERROR(breakdown.EndEpoch(strategy, reducer->TakeTiming(), &logs));
//
// A step's wall time (input, forward, backward, gradient all-reduce, optimizer,
// the metrics' reduction) is split into fractions that sum to 1:
//   step_breakdown/data_wait               waiting for the input pipeline;
//   step_breakdown/exposed_communication   blocked in a collective (the gradients'
//                                          end of step, the metrics' reduction,
//                                          batch statistics, SyncBatchNormalization);
//   step_breakdown/hidden_communication    computing while packs were reduced;
//   step_breakdown/compute                 the rest: computing alone.
// Averaged over the workers' time. With more than one worker, when the others
// were blocked at least 0.05 ms a step longer than one worker, also
//   slowest_worker/rank                    the worker the others waited for: the
//                                          one blocked least in collectives;
//   slowest_worker/others_waited_ms        how much longer the others were
//                                          blocked per step, on average.
// "Communication" is the all-reduce thread's time, so it includes waiting there
// for a slower peer. A step is the input, TrainStep and the metrics' reduction;
// replica checks and callbacks (checkpoint saves) between steps are outside it.
// EndEpoch is a collective (one all-reduce): every worker calls it at the same point.
#ifndef RINGWORK_KERAS_STEP_BREAKDOWN_H_
#define RINGWORK_KERAS_STEP_BREAKDOWN_H_

#include <cstdint>

#include "absl/status/status.h"
#include "keras/callbacks.h"
#include "strategy/gradient_reducer.h"
#include "strategy/multi_worker_mirrored_strategy.h"

namespace ringwork {

inline constexpr char kBreakdownCompute[] = "step_breakdown/compute";
inline constexpr char kBreakdownHidden[] = "step_breakdown/hidden_communication";
inline constexpr char kBreakdownExposed[] = "step_breakdown/exposed_communication";
inline constexpr char kBreakdownDataWait[] = "step_breakdown/data_wait";
inline constexpr char kSlowestWorkerRank[] = "slowest_worker/rank";
inline constexpr char kSlowestWorkerLeadMs[] = "slowest_worker/others_waited_ms";
inline constexpr double kSlowestWorkerMinLeadMs = 0.05;

class StepBreakdown {
 public:
  void AddStep(double step_s, double data_wait_s, double collective_s);
  // Agrees on this epoch's figures over every worker and adds them to `logs`;
  // then starts counting the next epoch.
  absl::Status EndEpoch(MultiWorkerMirroredStrategy* strategy,
                        const GradientReducer::Timing& reducer, Logs* logs);

 private:
  int64_t steps_ = 0;
  double step_s_ = 0, data_wait_s_ = 0, collective_s_ = 0;
};

}  // namespace ringwork

#endif  // RINGWORK_KERAS_STEP_BREAKDOWN_H_
