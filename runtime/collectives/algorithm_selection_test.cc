#include "runtime/collectives/algorithm_selection.h"

#include <catch2/catch.hpp>

namespace ringwork {
namespace {

TEST_CASE("small all-reduces use recursive doubling, large ones the ring", "[selection]") {
  CollectiveOptions options;
  const size_t frame = 1 << 20;
  CHECK(ChooseAllReduce(4, 2, frame, options) == AllReduceAlgorithm::kRecursiveDoubling);
  CHECK(ChooseAllReduce(16 << 20, 2, frame, options) == AllReduceAlgorithm::kRing);
  // The threshold grows with the world size (the ring's latency term grows as p).
  const size_t mid = 100 << 10;
  CHECK(ChooseAllReduce(mid, 2, frame, options) == AllReduceAlgorithm::kRing);
  CHECK(ChooseAllReduce(mid, 8, frame, options) == AllReduceAlgorithm::kRecursiveDoubling);
}

TEST_CASE("forced algorithms are honoured unless impossible", "[selection]") {
  CollectiveOptions options;
  options.allreduce_algorithm = AllReduceAlgorithm::kRing;
  CHECK(ChooseAllReduce(4, 4, 1 << 20, options) == AllReduceAlgorithm::kRing);
  options.allreduce_algorithm = AllReduceAlgorithm::kRecursiveDoubling;
  CHECK(ChooseAllReduce(4, 4, 1 << 20, options) == AllReduceAlgorithm::kRecursiveDoubling);
  // Recursive doubling sends the whole buffer in one frame: too big falls back.
  CHECK(ChooseAllReduce(8 << 20, 4, 1 << 20, options) == AllReduceAlgorithm::kRing);
}

TEST_CASE("broadcast shape", "[selection]") {
  CollectiveOptions options;
  CHECK(ChooseBroadcast(64, 8, options) == BroadcastShape::kBinomialTree);
  CHECK(ChooseBroadcast(64 << 20, 8, options) == BroadcastShape::kChain);
  CHECK(ChooseBroadcast(64 << 20, 2, options) == BroadcastShape::kBinomialTree);
}

TEST_CASE("algorithm names parse back", "[selection]") {
  AllReduceAlgorithm a;
  CHECK(ParseAllReduceAlgorithm("ring", &a));
  CHECK(a == AllReduceAlgorithm::kRing);
  CHECK(ParseAllReduceAlgorithm("recursive_doubling", &a));
  CHECK_FALSE(ParseAllReduceAlgorithm("tree", &a));
}

}  // namespace
}  // namespace ringwork
