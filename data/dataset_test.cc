#include "data/dataset.h"

#include <catch2/catch.hpp>
#include <set>

namespace ringwork {
namespace {

Examples Numbered(int64_t n, int files = 1) {
  Examples e;
  e.features = Tensor({n, 2});
  for (int64_t i = 0; i < n; ++i) {
    e.features[2 * i] = static_cast<float>(i);
    e.features[2 * i + 1] = -static_cast<float>(i);
    e.labels.push_back(static_cast<int32_t>(i));
    e.file_index.push_back(static_cast<int32_t>(i % files));
  }
  for (int f = 0; f < files; ++f) e.files.push_back("file" + std::to_string(f));
  return e;
}

std::vector<int32_t> Epoch(const Dataset& d, int64_t epoch) {
  std::vector<int32_t> seen;
  auto it = d.Iterate(epoch);
  Batch b;
  while (it->Next(&b)) {
    for (int64_t i = 0; i < b.size(); ++i) {
      CHECK(b.features[2 * i] == static_cast<float>(b.labels[i]));
      seen.push_back(b.labels[i]);
    }
  }
  CHECK(it->status().ok());
  return seen;
}

TEST_CASE("a seeded shuffle is the same everywhere and new every epoch", "[dataset]") {
  Dataset a = Dataset::FromExamples(Numbered(100)).Shuffle(7).Batch(10);
  Dataset b = Dataset::FromExamples(Numbered(100)).Shuffle(7).Batch(10);
  CHECK(Epoch(a, 0) == Epoch(b, 0));
  CHECK(Epoch(a, 0) != Epoch(a, 1));
  auto all = Epoch(a, 3);
  CHECK(std::set<int32_t>(all.begin(), all.end()).size() == 100);
}

TEST_CASE("DATA sharding splits one shuffled order between workers", "[dataset]") {
  Dataset base = Dataset::FromExamples(Numbered(103)).Shuffle(1).Batch(8);
  std::set<int32_t> union_of_shards;
  size_t total = 0;
  for (int64_t r = 0; r < 3; ++r) {
    auto shard = base.Shard(3, r, AutoShardPolicy::kData);
    REQUIRE(shard.ok());
    auto seen = Epoch(*shard, 2);
    CHECK(static_cast<int64_t>(seen.size()) == shard->cardinality());
    total += seen.size();
    union_of_shards.insert(seen.begin(), seen.end());
  }
  CHECK(total == 103);
  CHECK(union_of_shards.size() == 103);
  CHECK(base.Shard(3, 0, AutoShardPolicy::kData)->cardinality() == 35);
  CHECK(base.Shard(3, 2, AutoShardPolicy::kData)->cardinality() == 34);
}

TEST_CASE("FILE sharding needs as many files as workers", "[dataset]") {
  Dataset d = Dataset::FromExamples(Numbered(40, 4)).Batch(5);
  auto shard = d.Shard(2, 1, AutoShardPolicy::kFile);
  REQUIRE(shard.ok());
  for (int32_t label : Epoch(*shard, 0)) CHECK(label % 4 % 2 == 1);
  auto too_many = d.Shard(5, 0, AutoShardPolicy::kFile);
  REQUIRE_FALSE(too_many.ok());
  CHECK(std::string(too_many.status().message()) ==
        "auto-shard policy FILE needs at least as many input files as workers: 4 files for 5 "
        "workers; use the DATA policy or split the input into more files");
}

TEST_CASE("batching keeps or drops the remainder", "[dataset]") {
  Dataset keep = Dataset::FromExamples(Numbered(23)).Batch(5);
  Dataset drop = Dataset::FromExamples(Numbered(23)).Batch(5, /*drop_remainder=*/true);
  CHECK(keep.batches_per_epoch() == 5);
  CHECK(drop.batches_per_epoch() == 4);
  CHECK(Epoch(keep, 0).size() == 23);
  CHECK(Epoch(drop, 0).size() == 20);
  auto limited = keep.Iterate(0, /*max_batches=*/2);
  Batch b;
  int batches = 0;
  while (limited->Next(&b)) ++batches;
  CHECK(batches == 2);
}

TEST_CASE("repeat runs through epochs, each in its own order", "[dataset]") {
  Dataset d = Dataset::FromExamples(Numbered(10)).Shuffle(5).Batch(4);
  auto three = Epoch(d.Repeat(3), 0);
  CHECK(three.size() == 30);
  std::vector<int32_t> expected = Epoch(d, 0);
  for (int32_t x : Epoch(d, 1)) expected.push_back(x);
  for (int32_t x : Epoch(d, 2)) expected.push_back(x);
  CHECK(three == expected);
  auto forever = d.Repeat().Prefetch(2).Iterate(0, /*max_batches=*/100);
  Batch b;
  int batches = 0;
  while (forever->Next(&b)) ++batches;
  CHECK(batches == 100);
  // tf.data's cardinality counts the passes; forever is infinite.
  CHECK(d.cardinality() == 10);
  CHECK(d.Repeat(3).cardinality() == 30);
  CHECK(d.Repeat().cardinality() == Dataset::kInfiniteCardinality);
  CHECK(d.Repeat(3).examples_per_pass() == 10);
  CHECK(d.Repeat(3).batches_per_epoch() == 3);
}

TEST_CASE("prefetching yields exactly what plain iteration does", "[dataset]") {
  Dataset plain = Dataset::FromExamples(Numbered(1000)).Shuffle(3).Batch(32);
  CHECK(Epoch(plain.Prefetch(3), 1) == Epoch(plain, 1));
  // Abandoning a prefetching iterator early stops its thread.
  auto it = plain.Prefetch(2).Iterate(0);
  Batch b;
  CHECK(it->Next(&b));
}

}  // namespace
}  // namespace ringwork
