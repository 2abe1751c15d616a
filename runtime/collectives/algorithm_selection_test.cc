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

TEST_CASE("over network links recursive doubling runs up to 1 MiB at a power of two, less between",
          "[selection]") {
  CollectiveOptions options;
  const size_t frame = 4 << 20;
  for (int p : {2, 4, 8, 16, 32}) {
    INFO(p << " ranks");
    CHECK(RecursiveDoublingBelow(p, options, /*network_links=*/true) == (1u << 20));
    CHECK(ChooseAllReduce(918 << 10, p, frame, options, nullptr, true) ==
          AllReduceAlgorithm::kRecursiveDoubling);
    CHECK(ChooseAllReduce(1 << 20, p, frame, options, nullptr, true) == AllReduceAlgorithm::kRing);
  }
  // Two more whole-buffer messages: break-even with a message worth 128 KiB.
  CHECK(RecursiveDoublingBelow(3, options, true) == 78643);   // 128 Ki x 1 x 3 / 5
  CHECK(RecursiveDoublingBelow(5, options, true) == 218453);  // 128 Ki x 4 x 5 / 12
  CHECK(RecursiveDoublingBelow(6, options, true) == 337042);  // 128 Ki x 6 x 6 / 14
  CHECK(RecursiveDoublingBelow(7, options, true) == 458752);  // 128 Ki x 8 x 7 / 16
  CHECK(ChooseAllReduce(918 << 10, 3, frame, options, nullptr, true) == AllReduceAlgorithm::kRing);
  // Over shared memory (or unknown links) the ring carries the MLP's gradients.
  CHECK(ChooseAllReduce(918 << 10, 2, frame, options) == AllReduceAlgorithm::kRing);
  CHECK(RecursiveDoublingBelow(2, options, false) == (64u << 10));
  CHECK(RecursiveDoublingBelow(1, options, true) == 0);
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
