#include "runtime/transport/grpc/cq_loop.h"

#include <grpc/support/time.h>
#include <pthread.h>

#include <algorithm>

namespace ringwork {
namespace {

// A poll that returns at once. (A deadline of "now" would not: gRPC rounds the
// poller's timeout up to whole milliseconds; ../shared/docs/grpc-transport-facts.md.)
gpr_timespec Past() { return gpr_inf_past(GPR_CLOCK_MONOTONIC); }

gpr_timespec FromNow(int64_t micros) {
  return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_micros(micros, GPR_TIMESPAN));
}

// Set while this thread runs an OnEvent as a borrower (DeliveringToBorrower).
thread_local bool t_delivering_to_borrower = false;

}  // namespace

CompletionQueueLoop::~CompletionQueueLoop() { ShutdownAndJoin(); }

void CompletionQueueLoop::Start() {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "rw-grpc-cq");
    Run();
  });
}

void CompletionQueueLoop::Run() {
  while (true) {
    bool resumed = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // A borrower returns the queue without waking this thread (that would cost
      // the wake-up the borrowing saves): it looks again every linger.
      while (!stopping_ && (borrowed_ || Clock::now() < resume_at_)) {
        changed_.wait_until(lock, borrowed_ ? Clock::now() + linger_ : resume_at_);
      }
      if (stopping_) break;
      resumed = returned_ && on_resume_;
      returned_ = false;
      // Not marked as polling while the resume work runs: a borrower that comes
      // meanwhile needs no kick, and this thread looks at borrowed_ again first.
      if (!resumed) loop_polling_ = true;
    }
    if (resumed) {
      on_resume_();
      continue;
    }
    void* tag = nullptr;
    bool ok = false;
    // Blocks until an event (a borrower's kick is one) or for one linger: the
    // borrower may take the kick off the queue before this thread sees it, and
    // meanwhile polls without blocking (PollBlocking) until this thread is out.
    const grpc::CompletionQueue::NextStatus next = cq_->AsyncNext(
        &tag, &ok, FromNow(std::chrono::duration_cast<std::chrono::microseconds>(linger_).count()));
    if (next == grpc::CompletionQueue::GOT_EVENT) Deliver(tag, ok, /*to_borrower=*/false);
    {
      std::lock_guard<std::mutex> lock(mu_);
      loop_polling_ = false;
    }
    changed_.notify_all();
    if (next == grpc::CompletionQueue::SHUTDOWN) return;
  }
  // Shutting down: deliver what is left until the queue is drained.
  void* tag = nullptr;
  bool ok = false;
  while (cq_->Next(&tag, &ok)) Deliver(tag, ok, /*to_borrower=*/false);
}

void CompletionQueueLoop::Deliver(void* tag, bool ok, bool to_borrower) {
  std::lock_guard<std::mutex> lock(dispatch_mu_);
  struct Mark {  // Cleared however OnEvent ends.
    explicit Mark(bool on) { t_delivering_to_borrower = on; }
    ~Mark() { t_delivering_to_borrower = false; }
  } mark(to_borrower);
  static_cast<CqTag*>(tag)->OnEvent(ok);
}

bool CompletionQueueLoop::DeliveringToBorrower() { return t_delivering_to_borrower; }

void CompletionQueueLoop::Kick::OnEvent(bool) {
  std::lock_guard<std::mutex> lock(loop_->mu_);
  loop_->kick_pending_ = false;
}

bool CompletionQueueLoop::LoopThreadPolling() {
  std::lock_guard<std::mutex> lock(mu_);
  return loop_polling_;
}

void CompletionQueueLoop::Borrow() {
  bool kick = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    borrowed_ = true;
    kick = loop_polling_ && !kick_pending_;
    if (kick) kick_pending_ = true;
  }
  // Fires at once: the loop thread leaves gRPC and parks. Meanwhile the borrower
  // may poll too (gRPC allows several pollers; deliveries are serialized).
  if (kick) kick_alarm_.Set(cq_, Past(), &kick_);
}

bool CompletionQueueLoop::Poll() {
  // Bounded, so that the caller gets back to its own checks (abort, deadline) even
  // under a flood of calls.
  constexpr int kMaxEventsPerPoll = 64;
  int delivered = 0;
  void* tag = nullptr;
  bool ok = false;
  while (delivered < kMaxEventsPerPoll &&
         cq_->AsyncNext(&tag, &ok, Past()) == grpc::CompletionQueue::GOT_EVENT) {
    Deliver(tag, ok, /*to_borrower=*/true);
    ++delivered;
  }
  return delivered > 0;
}

bool CompletionQueueLoop::PollBlocking(absl::Duration max) {
  // While the loop thread is still in gRPC's poller (on its way out after the
  // kick), it is the one that sees sockets: a blocked borrower would not be woken
  // for a completion it delivers. Poll without blocking until it is out.
  if (LoopThreadPolling()) {
    if (Poll()) return true;
    std::this_thread::yield();
    return false;
  }
  void* tag = nullptr;
  bool ok = false;
  if (cq_->AsyncNext(&tag, &ok, FromNow(absl::ToInt64Microseconds(max))) !=
      grpc::CompletionQueue::GOT_EVENT) {
    return false;
  }
  Deliver(tag, ok, /*to_borrower=*/true);
  Poll();
  return true;
}

void CompletionQueueLoop::Return(bool resume_now) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    borrowed_ = false;
    returned_ = true;
    resume_at_ = Clock::now() + (resume_now ? Clock::duration::zero() : linger_);
  }
  if (resume_now) changed_.notify_all();
}

void CompletionQueueLoop::ShutdownAndJoin() {
  if (shut_down_) return;
  shut_down_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  cq_->Shutdown();
  if (thread_.joinable()) {
    thread_.join();
  } else {
    // Never started: drain here.
    void* tag = nullptr;
    bool ok = false;
    while (cq_->Next(&tag, &ok)) Deliver(tag, ok, /*to_borrower=*/false);
  }
}

}  // namespace ringwork
