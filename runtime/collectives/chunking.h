// Which bytes go where: the pure arithmetic of the ring and recursive-doubling
// algorithms, kept apart from any data movement so it can be tested exhaustively.
//
// Terms (one place, used by every algorithm file):
//   p        world size; ranks 0..p-1; the ring sends to rank+1 and receives from
//            rank-1 (mod p).
//   chunk    one of p contiguous element ranges of the buffer; chunk c is the part
//            rank c owns at the end of a reduce-scatter.
//   segment  a piece of a chunk of at most `segment_elems` elements; the unit that
//            is sent in one frame, so that sending, receiving and reducing overlap.
//   step     one round of an algorithm; every rank sends one chunk and receives one.
//
// Ring reduce-scatter, step k in [0, p-2], at rank r:
//   send chunk (r-k-1) mod p;  receive chunk (r-k-2) mod p and reduce into it.
//   After the last step rank r holds the complete reduction of chunk r.
// Ring all-gather, step k in [0, p-2], at rank r:
//   send chunk (r-k) mod p;  receive chunk (r-k-1) mod p and copy it.
// In both, what a rank sends at step k+1 is what it received at step k.
#ifndef RINGWORK_RUNTIME_COLLECTIVES_CHUNKING_H_
#define RINGWORK_RUNTIME_COLLECTIVES_CHUNKING_H_

#include <cstddef>
#include <vector>

namespace ringwork {

struct ElementRange {
  size_t offset = 0;  // In elements.
  size_t count = 0;
  bool operator==(const ElementRange& o) const { return offset == o.offset && count == o.count; }
};

// Chunk c of `count` elements split over p ranks as evenly as possible: the first
// (count mod p) chunks have one element more.
ElementRange BalancedChunk(size_t count, int p, int c);
// The p chunks of BalancedChunk, in order.
std::vector<ElementRange> BalancedChunks(size_t count, int p);
// p chunks of exactly `count_per_rank` elements (all-gather, reduce-scatter).
std::vector<ElementRange> EqualChunks(size_t count_per_rank, int p);

// Segments of a range of `count` elements, at most `segment_elems` each.
size_t SegmentCount(size_t count, size_t segment_elems);
ElementRange Segment(size_t count, size_t segment_elems, size_t index);

inline int Mod(int a, int p) { return ((a % p) + p) % p; }

struct RingStep {
  int send_chunk;
  int recv_chunk;
};
RingStep ReduceScatterStep(int rank, int p, int k);
RingStep AllGatherStep(int rank, int p, int k);

// Recursive doubling over p ranks that need not be a power of two (the pre/post
// step of Rabenseifner): with q the largest power of two <= p and rem = p - q, the
// first 2*rem ranks pair up; the even rank of each pair hands its data to the odd
// one before the doubling and gets the result back after it.
struct RecursiveDoublingPlan {
  int rounds = 0;             // log2(q): the same on every rank.
  int pre_send_to = -1;       // Even rank of a pair: sends its data here, then waits.
  int pre_recv_from = -1;     // Odd rank of a pair: receives and reduces this.
  std::vector<int> partners;  // Doubling rounds: exchange-and-reduce with each.
  int post_send_to = -1;      // Odd rank: sends the result back here.
  int post_recv_from = -1;    // Even rank: receives the result from here.
};
RecursiveDoublingPlan PlanRecursiveDoubling(int rank, int p);

// Binomial-tree broadcast from `root`: whom `rank` receives from (-1 for the root)
// and whom it sends to, in order.
struct TreeNode {
  int parent = -1;
  std::vector<int> children;
};
TreeNode BinomialTreeNode(int rank, int p, int root);

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_COLLECTIVES_CHUNKING_H_
