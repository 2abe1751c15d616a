#include "keras/step_breakdown.h"

#include <algorithm>
#include <vector>

#include "base/status_macros.h"

namespace ringwork {

void StepBreakdown::AddStep(double step_s, double data_wait_s, double collective_s) {
  ++steps_;
  step_s_ += step_s;
  data_wait_s_ += data_wait_s;
  collective_s_ += collective_s;
}

absl::Status StepBreakdown::EndEpoch(MultiWorkerMirroredStrategy* strategy,
                                     const GradientReducer::Timing& reducer, Logs* logs) {
  // This worker's seconds, split so that they add up to its steps' time.
  const double data = std::min(data_wait_s_, step_s_);
  const double exposed = std::min(reducer.exposed_s + collective_s_, step_s_ - data);
  const double hidden =
      std::clamp(reducer.communication_s - reducer.exposed_s, 0.0, step_s_ - data - exposed);
  const double compute = step_s_ - data - exposed - hidden;
  // [compute, hidden, exposed, data, steps, then each worker's exposed seconds].
  const int workers = strategy->num_replicas_in_sync();
  std::vector<double> sums(5 + static_cast<size_t>(workers), 0.0);
  sums[0] = compute;
  sums[1] = hidden;
  sums[2] = exposed;
  sums[3] = data;
  sums[4] = static_cast<double>(steps_);
  sums[5 + static_cast<size_t>(strategy->rank())] = exposed;
  steps_ = 0;
  step_s_ = data_wait_s_ = collective_s_ = 0;
  RW_RETURN_IF_ERROR(
      strategy->Reduce(ReduceOp::kSum, sums.data(), static_cast<int64_t>(sums.size())));
  for (const char* name : {kBreakdownCompute, kBreakdownHidden, kBreakdownExposed,
                           kBreakdownDataWait, kSlowestWorkerRank, kSlowestWorkerLeadMs}) {
    logs->erase(name);  // No figures of an earlier epoch pass for this one's.
  }
  const double total = sums[0] + sums[1] + sums[2] + sums[3];
  if (total <= 0) return absl::OkStatus();  // No step ran this epoch.
  (*logs)[kBreakdownCompute] = sums[0] / total;
  (*logs)[kBreakdownHidden] = sums[1] / total;
  (*logs)[kBreakdownExposed] = sums[2] / total;
  (*logs)[kBreakdownDataWait] = sums[3] / total;
  if (workers > 1 && sums[4] > 0) {
    const auto waits = sums.begin() + 5;
    const int slowest = static_cast<int>(std::min_element(waits, sums.end()) - waits);
    double others = 0;
    for (int r = 0; r < workers; ++r) {
      if (r != slowest) others += waits[r] - waits[slowest];
    }
    const double lead_ms = 1000 * others / (workers - 1) / (sums[4] / workers);
    // Below this nobody waited for anyone: no worker is named.
    if (lead_ms >= kSlowestWorkerMinLeadMs) {
      (*logs)[kSlowestWorkerRank] = slowest;
      (*logs)[kSlowestWorkerLeadMs] = lead_ms;
    }
  }
  return absl::OkStatus();
}

}  // namespace ringwork
