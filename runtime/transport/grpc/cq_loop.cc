#include "runtime/transport/grpc/cq_loop.h"

#include <pthread.h>

namespace ringwork {

CompletionQueueLoop::~CompletionQueueLoop() { ShutdownAndJoin(); }

void CompletionQueueLoop::Start() {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "rw-grpc-cq");
    void* tag = nullptr;
    bool ok = false;
    // Next() returns false only once the queue is shut down and drained.
    while (cq_->Next(&tag, &ok)) static_cast<CqTag*>(tag)->OnEvent(ok);
  });
}

void CompletionQueueLoop::ShutdownAndJoin() {
  if (shut_down_) return;
  shut_down_ = true;
  cq_->Shutdown();
  if (thread_.joinable()) thread_.join();
}

}  // namespace ringwork
