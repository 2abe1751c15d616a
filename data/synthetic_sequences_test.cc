#include "data/synthetic_sequences.h"

#include <catch2/catch.hpp>
#include <cstring>

namespace ringwork {
namespace {

TEST_CASE("synthetic_sequences: each marker once, labels from their order, a known optimum",
          "[synthetic_sequences]") {
  absl::StatusOr<SequenceSet> set = SyntheticSequences({.train = 2000, .test = 4000});
  REQUIRE(set.ok());
  const Examples& test = set->data.test;
  REQUIRE(test.features.shape() == Shape{4000, 20});
  int64_t by_order = 0;
  for (int64_t i = 0; i < 4000; ++i) {
    int64_t at[5] = {-1, -1, -1, -1, -1};
    for (int64_t t = 0; t < 20; ++t) {
      const float id = test.features[i * 20 + t];
      REQUIRE(id >= 1);
      REQUIRE(id < 50);
      if (id <= 4) {
        REQUIRE(at[static_cast<int>(id)] < 0);  // Once only.
        at[static_cast<int>(id)] = t;
      }
    }
    for (int k = 1; k <= 4; ++k) REQUIRE(at[k] >= 0);
    by_order += test.labels[i] == 2 * (at[1] < at[2]) + (at[3] < at[4]);
  }
  // The order rule is right unless the label was replaced (noise 0.1).
  CHECK(set->bayes_accuracy == static_cast<double>(by_order) / 4000);
  CHECK(set->bayes_accuracy == Approx(0.9).margin(0.015));
  // Seeded: the same options give the same data.
  absl::StatusOr<SequenceSet> again = SyntheticSequences({.train = 2000, .test = 4000});
  REQUIRE(again.ok());
  CHECK(std::memcmp(again->data.train.features.data(), set->data.train.features.data(),
                    sizeof(float) * 2000 * 20) == 0);
  CHECK(again->data.train.labels == set->data.train.labels);
  CHECK_THAT(std::string(SyntheticSequences({.steps = 3}).status().message()),
             Catch::Contains("needs 4 or more steps"));
}

}  // namespace
}  // namespace ringwork
