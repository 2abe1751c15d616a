// The pipeline's transformations against what tf.data does, element by element.
#include "data/pipeline/pipeline.h"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "data/pipeline/test_records.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

// 0, 1, ..., n - 1 as elements {"x": int64 scalar}; counts its calls in `*made`.
Pipeline Range(int64_t n, std::atomic<int64_t>* made = nullptr) {
  return GeneratorPipeline(
      {{"x", ValueType::kInt64, {}}},
      [n, made](int64_t) {
        auto next = std::make_shared<int64_t>(0);
        return [n, made, next](Element* e) -> absl::StatusOr<bool> {
          if (*next >= n) return false;
          e->values.resize(1);
          e->values[0].Reset(ValueType::kInt64, {});
          e->values[0].data<int64_t>()[0] = (*next)++;
          if (made != nullptr) ++*made;
          return true;
        };
      },
      n);
}

// Every element's first value (scalars), or every row of a batch's.
std::vector<int64_t> Values(const Pipeline& p, const IterateOptions& options = {}) {
  absl::StatusOr<std::vector<Element>> all = ReadAll(p, options);
  INFO(all.status().message());
  REQUIRE(all.ok());
  std::vector<int64_t> out;
  for (const Element& e : *all) {
    for (int64_t i = 0; i < e.values[0].size(); ++i) {
      out.push_back(static_cast<int64_t>(e.values[0].ValueAsDouble(i)));
    }
  }
  return out;
}

std::vector<int64_t> Iota(int64_t from, int64_t to) {
  std::vector<int64_t> v;
  for (int64_t i = from; i < to; ++i) v.push_back(i);
  return v;
}

MapFn Times(int64_t k) {
  return [k](Element* e) {
    e->values[0].data<int64_t>()[0] *= k;
    return absl::OkStatus();
  };
}

TEST_CASE("take, skip, filter, shard and repeat", "[pipeline]") {
  CHECK(Values(Range(10).Take(3)) == Iota(0, 3));
  CHECK(Values(Range(10).Skip(7)) == Iota(7, 10));
  CHECK(Values(Range(10).Filter([](const Element& e) -> absl::StatusOr<bool> {
          return e.values[0].data<int64_t>()[0] % 3 == 0;
        })) == std::vector<int64_t>{0, 3, 6, 9});
  CHECK(Values(Range(10).Shard(3, 1)) == std::vector<int64_t>{1, 4, 7});
  CHECK(Values(Range(3).Repeat(2)) == std::vector<int64_t>{0, 1, 2, 0, 1, 2});
  CHECK(Values(Range(3).Repeat().Take(7)) == std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0});
  CHECK(Range(10).Shard(3, 1).node().cardinality() == 3);
  CHECK(Range(10).Repeat(2).Batch(3).node().cardinality() == 7);
}

TEST_CASE("a parallel map keeps the input's order and its errors' places", "[pipeline]") {
  const std::vector<int64_t> want = [] {
    std::vector<int64_t> v;
    for (int64_t i = 0; i < 1000; ++i) v.push_back(3 * i);
    return v;
  }();
  CHECK(Values(Range(1000).Map(Times(3))) == want);
  CHECK(Values(Range(1000).Map(Times(3), 4)) == want);
  CHECK(Values(Range(1000).Map(Times(3), kAutotune).Prefetch(8)) == want);
  // The element that fails is named after every element before it was given.
  auto it = Range(100)
                .Map(
                    [](Element* e) {
                      if (e->values[0].data<int64_t>()[0] == 42) {
                        return absl::InvalidArgumentError("forty-two");
                      }
                      return absl::OkStatus();
                    },
                    4)
                .Iterate();
  Element e;
  int64_t seen = 0;
  absl::StatusOr<bool> more = true;
  while (more.ok() && *more) {
    more = it->Next(&e);
    if (more.ok() && *more) ++seen;
  }
  CHECK(seen == 42);
  CHECK(more.status().message() == "forty-two");
}

TEST_CASE("a parallel map and a prefetch hold a bounded window", "[pipeline]") {
  std::atomic<int64_t> made{0};
  auto it = Range(100000, &made).Map(Times(1), 4).Prefetch(16).Iterate();
  Element e;
  for (int i = 0; i < 10; ++i) REQUIRE(*it->Next(&e));
  // Let the threads run ahead as far as they may.
  constexpr int64_t kMapWindow = 4 * 16 * 4;  // 4 runs of 16 per thread, 4 threads.
  for (int i = 0; i < 50 && made.load() < 10 + kMapWindow + 16; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // The map's window and the prefetch's (16); the prefetch's reader holds one.
  CHECK(made.load() <= 10 + kMapWindow + 16 + 1);
  CHECK(made.load() < 100000);
}

TEST_CASE("shuffle: tf.data's buffer, seeded by the seed and the pass", "[pipeline]") {
  const std::vector<int64_t> a = Values(Range(1000).Shuffle(100, 7), {.pass = 0});
  CHECK(a != Iota(0, 1000));
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == Iota(0, 1000));                                // A permutation.
  CHECK(Values(Range(1000).Shuffle(100, 7), {.pass = 0}) == a);  // Deterministic.
  CHECK(Values(Range(1000).Shuffle(100, 7), {.pass = 1}) != a);  // A new order each pass.
  CHECK(Values(Range(1000).Shuffle(100, 8), {.pass = 0}) != a);
  CHECK(Values(Range(1000).Shuffle(1, 7)) == Iota(0, 1000));  // A buffer of 1 keeps order.
  // An element can come out at most buffer_size - 1 places early.
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] <= static_cast<int64_t>(i) + 99);
}

TEST_CASE("batch and padded batch stack features along a new dimension", "[pipeline]") {
  auto batches = Range(10).Batch(4).Iterate();
  Element b;
  REQUIRE(*batches->Next(&b));
  CHECK(b.values[0].shape() == Shape{4});
  REQUIRE(*batches->Next(&b));
  REQUIRE(*batches->Next(&b));
  CHECK(b.values[0].shape() == Shape{2});  // The short last batch is kept.
  CHECK_FALSE(*batches->Next(&b));
  CHECK(Values(Range(10).Batch(4, /*drop_remainder=*/true)) == Iota(0, 8));
  // Variable-length ids: element i has i ids (i, i, ...), padded with -1.
  Pipeline ragged = Range(4).Map(
      [](Element* e) {
        const int64_t i = e->values[0].data<int64_t>()[0];
        e->values[0].Reset(ValueType::kInt64, {i});
        for (int64_t k = 0; k < i; ++k) e->values[0].data<int64_t>()[k] = i;
        return absl::OkStatus();
      },
      1, {{"ids", ValueType::kInt64, {-1}}});
  auto padded = ragged.PaddedBatch(4, {-1}).Iterate();
  REQUIRE(*padded->Next(&b));
  CHECK(b.values[0].shape() == Shape{4, 3});
  CHECK(Values(ragged.PaddedBatch(4, {-1})) ==
        std::vector<int64_t>{-1, -1, -1, 1, -1, -1, 2, 2, -1, 3, 3, 3});
  absl::StatusOr<bool> unpadded = ragged.Batch(4).Iterate()->Next(&b);
  REQUIRE_FALSE(unpadded.ok());
  CHECK(std::string(unpadded.status().message()).find("PaddedBatch pads variable lengths") !=
        std::string::npos);
}

TEST_CASE("cache replays the first pass from memory or a file", "[pipeline]") {
  for (const std::string path : {std::string(), FreshTestDir("cache") + "/cache.bin"}) {
    std::atomic<int64_t> made{0};
    Pipeline cached = Range(50, &made).Map(Times(2)).Cache(path);
    const std::vector<int64_t> first = Values(cached, {.pass = 0});
    CHECK(made.load() == 50);
    CHECK(Values(cached, {.pass = 1}) == first);
    CHECK(made.load() == 50);  // Not read again.
  }
  // A pass abandoned half-way leaves no cache behind.
  std::atomic<int64_t> made{0};
  Pipeline cached = Range(50, &made).Cache();
  {
    auto it = cached.Iterate();
    Element e;
    REQUIRE(*it->Next(&e));
  }
  CHECK(Values(cached).size() == 50);
  CHECK(made.load() == 51);
}

TEST_CASE("interleave reads cycle_length inputs at once, block by block", "[pipeline]") {
  // Input i opens a pipeline of 10 * i .. 10 * i + 2.
  InterleaveFn open = [](const Element& e) -> absl::StatusOr<Pipeline> {
    const int64_t base = 10 * e.values[0].data<int64_t>()[0];
    return Range(3).Map([base](Element* x) {
      x->values[0].data<int64_t>()[0] += base;
      return absl::OkStatus();
    });
  };
  const ElementSpec spec = {{"x", ValueType::kInt64, {}}};
  CHECK(Values(Interleave(Range(3), open, spec, 2)) ==
        std::vector<int64_t>{0, 10, 1, 11, 2, 12, 20, 21, 22});
  CHECK(Values(Interleave(Range(2), open, spec, 2, 2)) ==
        std::vector<int64_t>{0, 1, 10, 11, 2, 12});
}

}  // namespace
}  // namespace ringwork
