// Where a transport's links get their completions when another layer runs them
// (gRPC's completion queue: runtime/transport/grpc/cq_loop.h). A thread that waits
// in Transport::Wait borrows the source and runs the completions itself, instead of
// sleeping until the source's own thread has run them and woken it (a wake-up costs
// about 30 us here, per message).
//
//   source->Borrow();
//   while (!done()) {
//     if (!source->Poll()) source->PollBlocking(absl::Milliseconds(20));
//   }
//   source->Return(/*resume_now=*/false);
//
// Threads: one borrower at a time (the thread running collectives).
#ifndef RINGWORK_RUNTIME_TRANSPORT_COMPLETION_SOURCE_H_
#define RINGWORK_RUNTIME_TRANSPORT_COMPLETION_SOURCE_H_

#include "absl/time/time.h"

namespace ringwork {

class CompletionSource {
 public:
  virtual ~CompletionSource() = default;
  // From now on the caller runs the completions; the source's own thread stops.
  virtual void Borrow() = 0;
  // Runs every completion that is ready, without blocking; true if any ran.
  virtual bool Poll() = 0;
  // Waits until a completion ran or `max` passed; true if one ran.
  virtual bool PollBlocking(absl::Duration max) = 0;
  // Gives the source back: its own thread resumes at once, or after a short
  // linger (so that a borrower waiting again soon finds it still idle).
  virtual void Return(bool resume_now) = 0;
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_TRANSPORT_COMPLETION_SOURCE_H_
