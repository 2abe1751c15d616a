// The thread that drives one gRPC completion queue: every asynchronous gRPC
// operation of the transport (accepting a peer's stream, reading a frame, writing
// one) completes here and is handed to the CqTag it was started with.
//
//   class ReadDone : public CqTag { void OnEvent(bool ok) override { ... } };
//   reader->Read(&buffer, &read_done);     // completes on the loop thread
//
// Threads: one, named "rw-grpc-cq". OnEvent implementations must be quick and
// must not block: they hand data over under a mutex and ring a doorbell.
#ifndef RINGWORK_RUNTIME_TRANSPORT_GRPC_CQ_LOOP_H_
#define RINGWORK_RUNTIME_TRANSPORT_GRPC_CQ_LOOP_H_

#include <grpcpp/completion_queue.h>

#include <thread>

namespace ringwork {

class CqTag {
 public:
  virtual ~CqTag() = default;
  // `ok` is gRPC's: false when the operation failed or the call ended.
  virtual void OnEvent(bool ok) = 0;
};

class CompletionQueueLoop {
 public:
  explicit CompletionQueueLoop(grpc::CompletionQueue* cq) : cq_(cq) {}  // Not owned.
  ~CompletionQueueLoop();
  CompletionQueueLoop(const CompletionQueueLoop&) = delete;
  CompletionQueueLoop& operator=(const CompletionQueueLoop&) = delete;

  void Start();
  // Shuts the queue down; the thread delivers every remaining event and exits.
  // Call only when no new operation will be started.
  void ShutdownAndJoin();

 private:
  grpc::CompletionQueue* cq_;
  std::thread thread_;
  bool shut_down_ = false;
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_TRANSPORT_GRPC_CQ_LOOP_H_
