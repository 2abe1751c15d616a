// What one running collective shares with the algorithm that runs it, and the
// receive sinks (copy, reduce) that put arrived bytes in place.
#ifndef RINGWORK_RUNTIME_COLLECTIVES_COLLECTIVE_CONTEXT_H_
#define RINGWORK_RUNTIME_COLLECTIVES_COLLECTIVE_CONTEXT_H_

#include <cstddef>
#include <cstdint>

#include "base/deadline.h"
#include "runtime/transport/request.h"
#include "runtime/transport/transport.h"
#include "tensor/dtype.h"
#include "tensor/reduce.h"

namespace ringwork {

struct CollectiveContext {
  Transport* transport = nullptr;  // Not owned.
  uint64_t seq = 0;                // This collective's sequence number.
  CollectiveInfo info;
  Deadline deadline = Deadline::Never();
  size_t segment_elems = 1;  // Elements per frame for pipelined algorithms.

  int rank() const { return transport->rank(); }
  int world_size() const { return transport->world_size(); }
  size_t element_bytes() const { return DataTypeSize(info.dtype); }
  FrameKey Key(uint32_t step, uint32_t segment) const { return FrameKey{seq, step, segment}; }
  absl::Status Wait(Request* request) const { return transport->Wait(request, deadline); }
};

// Where a receive puts its bytes: copied to `dst`, or reduced into it with `op`.
struct SinkTarget {
  uint8_t* dst = nullptr;  // Not owned.
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  bool reduce = false;
};

// A RecvSink that applies `target` (which must outlive the request).
RecvSink MakeSink(SinkTarget* target);

// A fixed-capacity array of requests with their sink targets; grows between
// collectives, never during one (requests must not move while pending).
class RequestPool {
 public:
  void Reserve(size_t count);
  Request& request(size_t i) { return requests_[i]; }
  SinkTarget& target(size_t i) { return targets_[i]; }

 private:
  size_t capacity_ = 0;
  std::unique_ptr<Request[]> requests_;
  std::unique_ptr<SinkTarget[]> targets_;
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_COLLECTIVES_COLLECTIVE_CONTEXT_H_
