// Broadcast down a tree, segment by segment: a rank forwards segment j to its
// children as soon as it has it. With a binomial tree (log2(p) hops) this is the
// small-message broadcast; with a chain (each rank's only child is the next one)
// it is the bandwidth-optimal large-message broadcast. chunking.h builds the trees.
#ifndef RINGWORK_RUNTIME_COLLECTIVES_PIPELINED_BROADCAST_H_
#define RINGWORK_RUNTIME_COLLECTIVES_PIPELINED_BROADCAST_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/collectives/chunking.h"
#include "runtime/collectives/collective_context.h"

namespace ringwork {

// The chain from `root` along the ring: parent rank-1, child rank+1.
TreeNode ChainNode(int rank, int p, int root);

class PipelinedBroadcast {
 public:
  absl::Status Run(const CollectiveContext& ctx, const TreeNode& node, uint8_t* data);

 private:
  RequestPool recvs_;
  RequestPool sends_;
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_COLLECTIVES_PIPELINED_BROADCAST_H_
