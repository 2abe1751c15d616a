#include "runtime/collectives/chunking.h"

#include <catch2/catch.hpp>
#include <set>

namespace ringwork {
namespace {

TEST_CASE("balanced chunks tile the buffer exactly, for every world and size", "[chunking]") {
  for (int p = 1; p <= 8; ++p) {
    for (size_t n : {size_t{0}, size_t{1}, size_t(p - 1), size_t(p), size_t(p + 1), size_t{13},
                     size_t{97}, size_t{1000003}}) {
      INFO("p=" << p << " n=" << n);
      size_t next = 0, largest = 0, smallest = n;
      for (const ElementRange& c : BalancedChunks(n, p)) {
        CHECK(c.offset == next);
        next += c.count;
        largest = std::max(largest, c.count);
        smallest = std::min(smallest, c.count);
      }
      CHECK(next == n);
      CHECK(largest - smallest <= 1);
    }
  }
}

TEST_CASE("segments tile a chunk", "[chunking]") {
  for (size_t n : {1, 2, 7, 64, 65, 1000}) {
    for (size_t seg : {1, 3, 64, 5000}) {
      size_t next = 0;
      const size_t count = SegmentCount(n, seg);
      for (size_t i = 0; i < count; ++i) {
        ElementRange s = Segment(n, seg, i);
        CHECK(s.offset == next);
        CHECK(s.count >= 1);
        CHECK(s.count <= seg);
        next += s.count;
      }
      CHECK(next == n);
    }
  }
  CHECK(SegmentCount(0, 10) == 0);
}

// Simulates the ring on sets of contributions: after reduce-scatter, rank r's chunk
// r must hold every rank's contribution; after all-gather every chunk everywhere.
TEST_CASE("the ring schedule reduces every chunk fully and spreads it", "[chunking]") {
  for (int p = 1; p <= 8; ++p) {
    INFO("p=" << p);
    // held[r][c] = set of ranks whose contribution to chunk c rank r holds.
    std::vector<std::vector<std::set<int>>> held(p, std::vector<std::set<int>>(p));
    for (int r = 0; r < p; ++r)
      for (int c = 0; c < p; ++c) held[r][c] = {r};
    for (int k = 0; k + 1 < p; ++k) {
      auto before = held;
      for (int r = 0; r < p; ++r) {
        const int left = Mod(r - 1, p);
        RingStep mine = ReduceScatterStep(r, p, k);
        RingStep lefts = ReduceScatterStep(left, p, k);
        CHECK(lefts.send_chunk == mine.recv_chunk);
        if (k > 0) CHECK(mine.send_chunk == ReduceScatterStep(r, p, k - 1).recv_chunk);
        for (int x : before[left][mine.recv_chunk]) held[r][mine.recv_chunk].insert(x);
      }
    }
    for (int r = 0; r < p; ++r) CHECK(held[r][r].size() == static_cast<size_t>(p));
    // All-gather: the first send is the owned chunk, then what was just received.
    std::vector<std::vector<bool>> complete(p, std::vector<bool>(p, false));
    for (int r = 0; r < p; ++r) complete[r][r] = true;
    for (int k = 0; k + 1 < p; ++k) {
      auto before = complete;
      for (int r = 0; r < p; ++r) {
        const int left = Mod(r - 1, p);
        RingStep mine = AllGatherStep(r, p, k);
        CHECK(AllGatherStep(left, p, k).send_chunk == mine.recv_chunk);
        CHECK(before[left][mine.recv_chunk]);
        if (k == 0) CHECK(mine.send_chunk == r);
        if (k == 0 && p > 1) CHECK(ReduceScatterStep(r, p, p - 2).recv_chunk == r);
        complete[r][mine.recv_chunk] = true;
      }
    }
    for (int r = 0; r < p; ++r)
      for (int c = 0; c < p; ++c) CHECK(complete[r][c]);
  }
}

TEST_CASE("recursive doubling reaches every rank's contribution", "[chunking]") {
  for (int p = 1; p <= 16; ++p) {
    INFO("p=" << p);
    std::vector<std::set<int>> held(p);
    std::vector<RecursiveDoublingPlan> plans;
    for (int r = 0; r < p; ++r) {
      held[r] = {r};
      plans.push_back(PlanRecursiveDoubling(r, p));
    }
    for (int r = 0; r < p; ++r) {
      if (plans[r].pre_recv_from >= 0) {
        CHECK(plans[plans[r].pre_recv_from].pre_send_to == r);
        held[r].insert(r - 1);
      }
    }
    size_t rounds = plans[p - 1].partners.size();
    for (size_t i = 0; i < rounds; ++i) {
      auto before = held;
      for (int r = 0; r < p; ++r) {
        if (plans[r].pre_send_to >= 0) continue;
        REQUIRE(plans[r].partners.size() == rounds);
        CHECK(plans[r].rounds == static_cast<int>(rounds));
        const int peer = plans[r].partners[i];
        CHECK(plans[peer].partners[i] == r);  // Partners agree.
        for (int x : before[peer]) held[r].insert(x);
      }
    }
    for (int r = 0; r < p; ++r) {
      CHECK(plans[r].rounds == static_cast<int>(rounds));
      if (plans[r].post_recv_from >= 0) {
        CHECK(plans[plans[r].post_recv_from].post_send_to == r);
        held[r] = held[plans[r].post_recv_from];
      }
      CHECK(held[r].size() == static_cast<size_t>(p));
    }
  }
}

TEST_CASE("the binomial tree reaches every rank exactly once", "[chunking]") {
  for (int p = 1; p <= 9; ++p) {
    for (int root = 0; root < p; ++root) {
      INFO("p=" << p << " root=" << root);
      std::vector<int> parent_count(p, 0);
      for (int r = 0; r < p; ++r) {
        TreeNode node = BinomialTreeNode(r, p, root);
        CHECK((node.parent == -1) == (r == root));
        for (int child : node.children) {
          CHECK(BinomialTreeNode(child, p, root).parent == r);
          ++parent_count[child];
        }
      }
      for (int r = 0; r < p; ++r) CHECK(parent_count[r] == (r == root ? 0 : 1));
    }
  }
}

}  // namespace
}  // namespace ringwork
