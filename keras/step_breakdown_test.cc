// The step breakdown on an in-process cluster of three real workers, from
// timings the test sets: fractions of the workers' time that sum to 1, and the
// worker the others waited for.
#include "keras/step_breakdown.h"

#include <catch2/catch.hpp>

#include "base/status_macros.h"
#include "testing/local_cluster.h"

namespace ringwork {
namespace {

TEST_CASE("the breakdown splits every worker's step time, and names the slowest", "[breakdown]") {
  LocalCluster::Options options;
  options.num_workers = 3;
  std::vector<Logs> logs(3);
  std::vector<absl::Status> results =
      LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
        StepBreakdown breakdown;
        // Two steps of 1 s each on every worker: 0.1 s waiting for data, 0.1 s in
        // the metrics' reduction; gradients reduced for 0.5 s, of which the worker
        // was blocked for its rank x 0.1 s (worker 0 blocked least: the slowest).
        for (int step = 0; step < 2; ++step) breakdown.AddStep(1.0, 0.1, 0.1);
        GradientReducer::Timing reducer;
        reducer.communication_s = 1.0;
        reducer.exposed_s = 0.2 * w.rank;
        return breakdown.EndEpoch(w.strategy, reducer, &logs[w.rank]);
      });
  for (const absl::Status& s : results) REQUIRE(s.ok());
  CHECK(logs[1] == logs[0]);
  CHECK(logs[2] == logs[0]);
  const Logs& l = logs[0];
  // Per worker (2 s): data 0.2; exposed 0.2 + 0.2 x rank; hidden 1.0 - 0.2 x rank;
  // compute the rest. Over the three (6 s): data 0.6, exposed 1.2, hidden 2.4.
  CHECK(l.at(kBreakdownDataWait) == Approx(0.6 / 6));
  CHECK(l.at(kBreakdownExposed) == Approx(1.2 / 6));
  CHECK(l.at(kBreakdownHidden) == Approx(2.4 / 6));
  CHECK(l.at(kBreakdownCompute) == Approx(1.8 / 6));
  CHECK(l.at(kBreakdownDataWait) + l.at(kBreakdownExposed) + l.at(kBreakdownHidden) +
            l.at(kBreakdownCompute) ==
        Approx(1.0));
  CHECK(l.at(kSlowestWorkerRank) == 0);
  // Others blocked 0.2 and 0.4 s longer over 2 steps: 150 ms a step on average.
  CHECK(l.at(kSlowestWorkerLeadMs) == Approx(150));
}

TEST_CASE("communication beyond the step is clamped; equal waits name no worker", "[breakdown]") {
  LocalCluster::Options options;
  options.num_workers = 2;
  std::vector<Logs> logs(2);
  std::vector<absl::Status> results =
      LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
        StepBreakdown breakdown;
        breakdown.AddStep(1.0, 0.25, 0.0);
        GradientReducer::Timing reducer;
        reducer.communication_s = 5.0;  // More than the step: hidden takes what is left.
        reducer.exposed_s = 0.25;
        logs[w.rank][kSlowestWorkerRank] = 7;  // A figure of an earlier epoch goes.
        return breakdown.EndEpoch(w.strategy, reducer, &logs[w.rank]);
      });
  for (const absl::Status& s : results) REQUIRE(s.ok());
  const Logs& l = logs[0];
  CHECK(l.at(kBreakdownDataWait) == Approx(0.25));
  CHECK(l.at(kBreakdownExposed) == Approx(0.25));
  CHECK(l.at(kBreakdownHidden) == Approx(0.5));
  CHECK(l.at(kBreakdownCompute) == Approx(0.0).margin(1e-12));
  CHECK(l.count(kSlowestWorkerRank) == 0);
  CHECK(l.count(kSlowestWorkerLeadMs) == 0);
}

TEST_CASE("on one worker the breakdown has no slowest worker; no step, no figures", "[breakdown]") {
  LocalCluster::Options options;
  options.num_workers = 1;
  Logs with_steps, without;
  std::vector<absl::Status> results =
      LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
        StepBreakdown breakdown;
        breakdown.AddStep(0.5, 0.6, 0);  // Clamped: the data wait cannot exceed the step.
        RW_RETURN_IF_ERROR(breakdown.EndEpoch(w.strategy, {}, &with_steps));
        return breakdown.EndEpoch(w.strategy, {}, &without);
      });
  REQUIRE(results[0].ok());
  CHECK(with_steps.at(kBreakdownDataWait) == 1.0);
  CHECK(with_steps.at(kBreakdownCompute) == 0.0);
  CHECK(with_steps.count(kSlowestWorkerRank) == 0);
  CHECK(without.empty());
}

}  // namespace
}  // namespace ringwork
