#include "runtime/collectives/chunking.h"

#include <algorithm>

#include "base/check.h"

namespace ringwork {

ElementRange BalancedChunk(size_t count, int p, int c) {
  RW_CHECK(p > 0 && c >= 0 && c < p) << "chunk " << c << " of " << p;
  const size_t base = count / p;
  const size_t extra = count % p;
  const size_t uc = static_cast<size_t>(c);
  return ElementRange{uc * base + std::min(uc, extra), base + (uc < extra ? 1 : 0)};
}

std::vector<ElementRange> BalancedChunks(size_t count, int p) {
  std::vector<ElementRange> chunks(p);
  for (int c = 0; c < p; ++c) chunks[c] = BalancedChunk(count, p, c);
  return chunks;
}

std::vector<ElementRange> EqualChunks(size_t count_per_rank, int p) {
  std::vector<ElementRange> chunks(p);
  for (int c = 0; c < p; ++c) chunks[c] = ElementRange{c * count_per_rank, count_per_rank};
  return chunks;
}

size_t SegmentCount(size_t count, size_t segment_elems) {
  RW_CHECK_GT(segment_elems, 0u);
  return (count + segment_elems - 1) / segment_elems;
}

ElementRange Segment(size_t count, size_t segment_elems, size_t index) {
  const size_t offset = index * segment_elems;
  RW_CHECK_LT(offset, count);
  return ElementRange{offset, std::min(segment_elems, count - offset)};
}

RingStep ReduceScatterStep(int rank, int p, int k) {
  return RingStep{Mod(rank - k - 1, p), Mod(rank - k - 2, p)};
}

RingStep AllGatherStep(int rank, int p, int k) {
  return RingStep{Mod(rank - k, p), Mod(rank - k - 1, p)};
}

RecursiveDoublingPlan PlanRecursiveDoubling(int rank, int p) {
  RecursiveDoublingPlan plan;
  int q = 1;
  while (q * 2 <= p) q *= 2;
  const int rem = p - q;
  for (int m = 1; m < q; m <<= 1) ++plan.rounds;
  int new_rank;
  if (rank < 2 * rem) {
    if (rank % 2 == 0) {
      plan.pre_send_to = rank + 1;
      plan.post_recv_from = rank + 1;
      return plan;
    }
    plan.pre_recv_from = rank - 1;
    plan.post_send_to = rank - 1;
    new_rank = rank / 2;
  } else {
    new_rank = rank - rem;
  }
  for (int mask = 1; mask < q; mask <<= 1) {
    const int new_peer = new_rank ^ mask;
    plan.partners.push_back(new_peer < rem ? new_peer * 2 + 1 : new_peer + rem);
  }
  return plan;
}

TreeNode BinomialTreeNode(int rank, int p, int root) {
  TreeNode node;
  const int relative = Mod(rank - root, p);
  int mask = 1;
  while (mask < p) {
    if (relative & mask) {
      node.parent = Mod(relative - mask + root, p);
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (relative + mask < p) node.children.push_back(Mod(relative + mask + root, p));
  }
  return node;
}

}  // namespace ringwork
