// Elastic training's data: after a regroup the survivors go on from the exact
// example reached, each step training on the same examples as before (only
// which replica takes which changes), every example once per pass.
#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "strategy/distributed_dataset.h"

namespace ringwork {
namespace {

constexpr int64_t kExamples = 1003;  // 25 global batches of 40 and a short one of 3.
constexpr int64_t kGlobalBatch = 40;

Dataset Numbered() {
  Examples e;
  e.features = Tensor({kExamples, 1});
  for (int64_t i = 0; i < kExamples; ++i) {
    e.features[i] = static_cast<float>(i);
    e.labels.push_back(static_cast<int32_t>(i % 10));
  }
  return Dataset::FromExamples(std::move(e));
}

// What DistributeDataset makes for DATA on `replicas` workers (its collectives
// only agree on what every worker computes alike here).
DistributedDataset Strided(const Dataset& data, int replicas, int rank) {
  DistributedDataset d;
  const Dataset one_pass = data.Repeat(1).Shuffle(7);
  d.global_batch_size = kGlobalBatch;
  d.per_replica_batch_size = kGlobalBatch / replicas;
  d.rank = rank;
  d.passes = -1;
  d.seed = 7;
  d.common = one_pass;
  for (int r = 0; r < replicas; ++r) {
    d.shard_examples.push_back(
        one_pass.Shard(replicas, r, AutoShardPolicy::kData)->examples_per_pass());
  }
  d.local = one_pass.Shard(replicas, rank, AutoShardPolicy::kData)->Batch(d.per_replica_batch_size);
  for (int64_t n : d.shard_examples) {
    d.steps_per_pass =
        std::max(d.steps_per_pass, (n + d.per_replica_batch_size - 1) / d.per_replica_batch_size);
  }
  d.steps_per_epoch = d.steps_per_pass;
  return d;
}

// The examples (by number) every replica of `group` trains on at global steps
// [from, to), one set per step; checks each replica's count against ExamplesAt.
std::vector<std::multiset<int>> Steps(const std::vector<DistributedDataset>& group, int64_t from,
                                      int64_t to) {
  std::vector<std::multiset<int>> steps(static_cast<size_t>(to - from));
  for (const DistributedDataset& d : group) {
    std::unique_ptr<StepIterator> it = d.Iterate(from);
    Batch batch;
    for (int64_t step = from; step < to; ++step) {
      REQUIRE(it->Next(&batch));
      CHECK(batch.size() == d.ExamplesAt(d.rank, step % d.steps_per_pass));
      for (int64_t i = 0; i < batch.size(); ++i) {
        steps[static_cast<size_t>(step - from)].insert(static_cast<int>(batch.features[i]));
      }
    }
  }
  return steps;
}

std::vector<DistributedDataset> Group(const Dataset& data, int replicas) {
  std::vector<DistributedDataset> group;
  for (int r = 0; r < replicas; ++r) group.push_back(Strided(data, replicas, r));
  return group;
}

std::vector<DistributedDataset> Regrouped(const std::vector<DistributedDataset>& before,
                                          int replicas, int64_t steps_done) {
  std::vector<DistributedDataset> group;
  for (int r = 0; r < replicas; ++r) {
    absl::StatusOr<DistributedDataset> d = before.front().Regrouped(
        replicas, r, before.front().PositionAfter(steps_done), kGlobalBatch);
    REQUIRE(d.ok());
    group.push_back(*d);
  }
  return group;
}

TEST_CASE("elastic data: survivors train on the same examples per step as before", "[elastic]") {
  const Dataset data = Numbered();
  const std::vector<DistributedDataset> four = Group(data, 4);
  REQUIRE(four[0].steps_per_pass == 26);
  // 4 -> 3 after 7 steps, then 3 -> 2 after 30 (in the second pass): each step
  // holds the examples it holds with 4 workers throughout.
  const std::vector<DistributedDataset> three = Regrouped(four, 3, 7);
  const std::vector<DistributedDataset> two = Regrouped(three, 2, 30);
  const auto reference = Steps(four, 7, 60);
  const auto after_three = Steps(three, 7, 30);
  const auto after_two = Steps(two, 30, 60);
  for (int64_t step = 7; step < 60; ++step) {
    INFO("step " << step);
    const auto& got = step < 30 ? after_three[static_cast<size_t>(step - 7)]
                                : after_two[static_cast<size_t>(step - 30)];
    CHECK(got == reference[static_cast<size_t>(step - 7)]);
  }
  // Uneven blocks (40 over 3: 14, 13, 13) and the short step (3 over 3: 1 each).
  CHECK(three[0].ExamplesAt(0, 10) == 14);
  CHECK(three[0].ExamplesAt(2, 10) == 13);
  CHECK(three[0].GlobalExamplesAt(25) == 3);
  CHECK(three[0].ExamplesAt(1, 25) == 1);
  CHECK(three[0].ExamplesPerPass() == kExamples);
  // Gradient weights: replicas x mine / all, so the weighted mean is every example's.
  CHECK(three[0].GradientWeightAt(10) == Approx(3.0 * 14 / 40));
  CHECK(three[2].GradientWeightAt(10) == Approx(3.0 * 13 / 40));
  CHECK(two[1].GradientWeightAt(10) == 1.0);
}

TEST_CASE("elastic data: every example once per pass after a regroup", "[elastic]") {
  const Dataset data = Numbered();
  const std::vector<DistributedDataset> four = Group(data, 4);
  for (int64_t done : {int64_t{0}, int64_t{1}, int64_t{13}, int64_t{25}}) {
    INFO("regroup after " << done << " steps");
    std::multiset<int> seen;
    for (const auto& step : Steps(four, 0, done)) seen.insert(step.begin(), step.end());
    for (const auto& step : Steps(Regrouped(four, 3, done), done, 26))
      seen.insert(step.begin(), step.end());
    std::multiset<int> all;
    for (int i = 0; i < kExamples; ++i) all.insert(i);
    CHECK(seen == all);
  }
}

// elastic_batch per_replica: each replica keeps 10 examples per step, so the
// global batch follows the ring (40 in strided shards, then 30 and 40 in blocks)
// and a pass takes as many steps as that needs; every example is still trained
// on once per pass, and each replica's gradient weight follows its count.
TEST_CASE("elastic data: a per-replica batch re-shards from the exact example reached",
          "[elastic]") {
  const Dataset data = Numbered();
  const std::vector<DistributedDataset> four = Group(data, 4);
  std::multiset<int> pass0, pass1;
  DataPosition at;
  // (replicas, steps) in turn: 4 for 7 steps (DistributeDataset's strided
  // shards), 3 for 20, 4 again for 20 (blocks).
  for (const auto& [replicas, steps] : std::vector<std::pair<int, int>>{{4, 7}, {3, 20}, {4, 20}}) {
    std::vector<DistributedDataset> ring = four;
    if (at.offset > 0 || at.pass > 0) {
      ring.clear();
      for (int r = 0; r < replicas; ++r) {
        absl::StatusOr<DistributedDataset> d =
            four.front().Regrouped(replicas, r, at, 10 * replicas);
        REQUIRE(d.ok());
        ring.push_back(*d);
      }
    }
    std::vector<std::unique_ptr<StepIterator>> its;
    for (const DistributedDataset& d : ring)
      its.push_back(d.block_replicas > 0 ? d.IterateFrom(at) : d.Iterate(0));
    for (int s = 0; s < steps; ++s) {
      const DataPosition step_at = its.front()->position();
      const int64_t expected = std::min<int64_t>(10 * replicas, kExamples - step_at.offset);
      std::vector<int64_t> sizes;
      for (int r = 0; r < replicas; ++r) {
        Batch batch;
        REQUIRE(its[static_cast<size_t>(r)]->Next(&batch));
        if (expected == 10 * replicas) CHECK(batch.size() == 10);
        sizes.push_back(batch.size());
        for (int64_t i = 0; i < batch.size(); ++i) {
          (step_at.pass == 0 ? pass0 : pass1).insert(static_cast<int>(batch.features[i]));
        }
      }
      CHECK(std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) == expected);
      for (int r = 0; r < replicas; ++r) {
        INFO("step at " << step_at.offset << ", replica " << r);
        CHECK(its[static_cast<size_t>(r)]->gradient_weight() ==
              Approx(static_cast<double>(replicas * sizes[static_cast<size_t>(r)]) /
                     static_cast<double>(expected)));
      }
    }
    at = its.front()->position();
    for (const auto& it : its) CHECK(it->position() == at);
  }
  // 7 x 40 + 20 x 30 = 880; then 4 x 10: 3 steps to 1000, one of 3 (weights 4/3
  // for three replicas, 0 for one) ends the pass, 16 of the next.
  CHECK(at.pass == 1);
  CHECK(at.offset == 16 * 40);
  std::multiset<int> all;
  for (int i = 0; i < kExamples; ++i) all.insert(i);
  CHECK(pass0 == all);
  CHECK(pass1.size() == 16 * 40);
  CHECK(std::set<int>(pass1.begin(), pass1.end()).size() == pass1.size());
  CHECK(four.front().StepsLeftInPass({0, 880}) == 4);
}

TEST_CASE("elastic data: FILE and OFF cannot be re-sharded", "[elastic]") {
  DistributedDataset off = Strided(Numbered(), 2, 0);
  off.common = Dataset();
  absl::StatusOr<DistributedDataset> refused =
      off.Regrouped(1, 0, off.PositionAfter(3), kGlobalBatch);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(std::string(refused.status().message()).find("DATA shard policy") != std::string::npos);
}

}  // namespace
}  // namespace ringwork
