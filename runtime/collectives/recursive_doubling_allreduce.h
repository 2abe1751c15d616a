// Latency-optimised all-reduce for small buffers: log2(p) rounds in which partners
// exchange their whole buffer and reduce, with the pre/post pairing step for world
// sizes that are not a power of two (chunking.h: PlanRecursiveDoubling). Each pair
// reduces in rank order (lower rank's value first), so every rank ends with the
// same bits even for operations that are not exactly commutative (min/max of NaN).
#ifndef RINGWORK_RUNTIME_COLLECTIVES_RECURSIVE_DOUBLING_ALLREDUCE_H_
#define RINGWORK_RUNTIME_COLLECTIVES_RECURSIVE_DOUBLING_ALLREDUCE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "runtime/collectives/collective_context.h"

namespace ringwork {

class RecursiveDoublingAllReduce {
 public:
  // `data` holds ctx.info.count elements; the whole buffer must fit one frame.
  absl::Status Run(const CollectiveContext& ctx, uint8_t* data);

 private:
  absl::Status Exchange(const CollectiveContext& ctx, uint32_t step, int peer, uint8_t* data,
                        size_t bytes, bool send, bool recv);
  std::vector<uint8_t> scratch_;
  Request send_;
  Request recv_;
  SinkTarget target_;
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_COLLECTIVES_RECURSIVE_DOUBLING_ALLREDUCE_H_
