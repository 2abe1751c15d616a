// Runs a sequence of ring steps over a buffer split into chunks, with every chunk
// cut into segments that flow through the steps independently: segment j of step
// k+1 is sent as soon as segment j of step k has arrived, so sending, receiving and
// reducing overlap. The ring algorithms (all-reduce, reduce-scatter, all-gather) are
// this class with different step lists. See chunking.h for the terms.
#ifndef RINGWORK_RUNTIME_COLLECTIVES_RING_PIPELINE_H_
#define RINGWORK_RUNTIME_COLLECTIVES_RING_PIPELINE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "runtime/collectives/chunking.h"
#include "runtime/collectives/collective_context.h"

namespace ringwork {

struct PipelineStep {
  int send_chunk;
  int recv_chunk;
  bool reduce;       // Reduce the received segment into the buffer, or copy it.
  bool finish_mean;  // After receiving, divide the segment by the world size.
};

// The ranks a ring runs over, in ring order (each sends to the next), and where
// this rank stands in it. The whole world by default; a subgroup for the phases of
// the hierarchical all-reduce.
struct RingGroup {
  std::vector<int> members;  // Global ranks; empty: every rank, in rank order.
  int position = 0;          // This rank's index in `members`.
  // Frame keys of this ring's steps start here, so that the phases of one
  // collective that share a link never share a key.
  uint32_t first_step = 0;
  // What a kMean's last reduce-scatter step divides by; 0: the group's size.
  int mean_divisor = 0;
};

// Reduce-scatter steps, then (if `all_gather`) all-gather steps, for rank r.
std::vector<PipelineStep> RingSteps(int rank, int p, bool reduce_scatter, bool all_gather,
                                    bool mean);

class RingPipeline {
 public:
  // Every step's send chunk after the first must be the previous step's receive
  // chunk. `chunks` are in elements; `buffer` is the whole buffer.
  // With a `group`, the chunks and steps are those of a ring of its size, at its
  // position.
  absl::Status Run(const CollectiveContext& ctx, uint8_t* buffer,
                   const std::vector<ElementRange>& chunks, const std::vector<PipelineStep>& steps,
                   const RingGroup& group = RingGroup());

 private:
  RequestPool sends_;
  RequestPool recvs_;
  std::vector<Request*> last_send_;  // Per (chunk, segment): its latest send.
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_COLLECTIVES_RING_PIPELINE_H_
