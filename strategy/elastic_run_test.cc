// The numbering of a run's operations, which every worker computes alike and a
// regroup goes on from.
#include "strategy/elastic_run.h"

#include <catch2/catch.hpp>

namespace ringwork {
namespace {

TEST_CASE("an epoch's operations are its begin, its steps and the two parts of its end",
          "[elastic]") {
  const FitOperations ops{.max_epoch_steps = 4};
  CHECK(ops.per_epoch() == 7);
  CHECK(ops.Begin(0) == 0);
  CHECK(ops.Step(0, 1) == 1);
  CHECK(ops.Step(0, 4) == 4);
  CHECK(ops.End(0) == 5);
  CHECK(ops.Decisions(0) == 6);
  // The decisions' successor is the next epoch's begin.
  CHECK(ops.Decisions(0) + 1 == ops.Begin(1));
  CHECK(ops.Begin(2) == 14);
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    for (int64_t op = ops.Begin(epoch); op < ops.Begin(epoch + 1); ++op) {
      CHECK(ops.EpochOf(op) == epoch);
      const int64_t in_epoch = ops.InEpoch(op);
      CHECK(op == ops.Begin(epoch) + in_epoch);
      CHECK(ops.IsStep(op) == (in_epoch >= 1 && in_epoch <= 4));
    }
  }
  CHECK_FALSE(ops.IsStep(ops.End(1)));
  CHECK_FALSE(ops.IsStep(ops.Decisions(1)));
}

TEST_CASE("a run that ended is beyond every operation", "[elastic]") {
  const FitOperations ops{.max_epoch_steps = 1 << 20};
  CHECK(ops.Begin(1000) < ElasticRun::kEnded);
}

}  // namespace
}  // namespace ringwork
