// Barrier: ceil(log2(p)) rounds; in round k rank r signals rank r+2^k and waits
// for rank r-2^k with an empty frame. No rank leaves before every rank has arrived.
#ifndef RINGWORK_RUNTIME_COLLECTIVES_DISSEMINATION_BARRIER_H_
#define RINGWORK_RUNTIME_COLLECTIVES_DISSEMINATION_BARRIER_H_

#include "absl/status/status.h"
#include "runtime/collectives/collective_context.h"

namespace ringwork {

class DisseminationBarrier {
 public:
  absl::Status Run(const CollectiveContext& ctx);

 private:
  Request send_;
  Request recv_;
  SinkTarget target_;
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_COLLECTIVES_DISSEMINATION_BARRIER_H_
