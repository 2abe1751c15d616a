// The completion queue of a worker's gRPC traffic and who runs it: every
// asynchronous gRPC operation of the process (accepting a peer's stream, reading a
// frame, writing one, answering Join and Heartbeat, the heartbeat calls) completes
// on this one queue and is handed to the CqTag it was started with.
//
//   class ReadDone : public CqTag { void OnEvent(bool ok) override { ... } };
//   CompletionQueueLoop loop(server->cq());
//   loop.Start();                              // "rw-grpc-cq" runs completions
//   reader->Read(&buffer, &read_done);
//   ...
//   loop.Borrow();                             // a collective thread runs them
//   while (!done()) if (!loop.Poll()) loop.PollBlocking(absl::Milliseconds(20));
//   loop.Return(false);                        // the loop thread resumes later
//
// Why lend it: with gRPC's epoll poller one thread at a time waits in epoll for the
// whole process and hands each completion to the thread that wants it, a wake-up
// of about 30 us on this machine per message. A collective thread that borrows the
// queue becomes that polling thread itself (in a worker process nothing else polls
// gRPC during a collective: Join and Heartbeat are served on this queue and the
// heartbeat calls go out on it; only the startup rendezvous has a queue of its
// own), so a frame that arrives is read, decoded and reduced on the thread that
// waits for it. (Several workers in one process, as LocalCluster runs them, share
// gRPC's poller: correct, only not as fast.) After a Return the loop thread resumes only
// after a linger (Options::linger_ms): steps that wait every few milliseconds keep
// the queue, and the loop thread is not woken in between.
//
// Threads: the loop thread, named "rw-grpc-cq", and one borrower at a time.
// OnEvent runs on whichever of them delivers the completion, one at a time (under
// a mutex); implementations must be quick and must not wait for other completions.
#ifndef RINGWORK_RUNTIME_TRANSPORT_GRPC_CQ_LOOP_H_
#define RINGWORK_RUNTIME_TRANSPORT_GRPC_CQ_LOOP_H_

#include <grpcpp/alarm.h>
#include <grpcpp/completion_queue.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "runtime/transport/completion_source.h"

namespace ringwork {

class CqTag {
 public:
  virtual ~CqTag() = default;
  // `ok` is gRPC's: false when the operation failed or the call ended.
  virtual void OnEvent(bool ok) = 0;
};

class CompletionQueueLoop : public CompletionSource {
 public:
  struct Options {
    // After a borrower returns the queue, the loop thread waits this long before it
    // polls again (a borrower that comes back sooner finds the queue free).
    double linger_ms = 10;
  };
  explicit CompletionQueueLoop(grpc::CompletionQueue* cq) : CompletionQueueLoop(cq, Options()) {}
  CompletionQueueLoop(grpc::CompletionQueue* cq, Options options)  // `cq` not owned.
      : cq_(cq),
        linger_(std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double, std::milli>(std::max(options.linger_ms, 1.0)))) {}
  ~CompletionQueueLoop() override;
  CompletionQueueLoop(const CompletionQueueLoop&) = delete;
  CompletionQueueLoop& operator=(const CompletionQueueLoop&) = delete;

  // Runs on the loop thread each time it takes the queue back from a borrower
  // (after the linger, or at once after Return(true); so not between the steps
  // of a busy job), before it polls again: work left for idle time, such as the
  // Reads GrpcLink owes. It runs outside the dispatch lock (concurrently with a
  // borrower's OnEvent) and, like any operation, must not start one once
  // ShutdownAndJoin has been called. Set before Start.
  void set_on_resume(std::function<void()> on_resume) { on_resume_ = std::move(on_resume); }
  // True while the calling thread runs an OnEvent as the queue's borrower (a
  // collective waiting), false on the loop thread: a completion handler can leave
  // work for the borrower's own poll instead of doing it at once.
  static bool DeliveringToBorrower();
  void Start();
  // Shuts the queue down; the thread delivers every remaining event and exits.
  // Call only when no new operation will be started and nobody borrows the queue.
  void ShutdownAndJoin();

  // CompletionSource: the borrower's side.
  void Borrow() override;
  bool Poll() override;
  bool PollBlocking(absl::Duration max) override;
  void Return(bool resume_now) override;

 private:
  using Clock = std::chrono::steady_clock;
  // Wakes the loop thread out of its wait in gRPC (an alarm that fires at once).
  class Kick : public CqTag {
   public:
    explicit Kick(CompletionQueueLoop* loop) : loop_(loop) {}
    void OnEvent(bool) override;

   private:
    CompletionQueueLoop* loop_;
  };

  void Run();
  void Deliver(void* tag, bool ok, bool to_borrower);
  bool LoopThreadPolling();

  grpc::CompletionQueue* cq_;
  const Clock::duration linger_;  // Options::linger_ms, at least 1 ms.
  std::function<void()> on_resume_;
  std::thread thread_;
  bool shut_down_ = false;
  std::mutex dispatch_mu_;  // Held while an OnEvent runs.

  std::mutex mu_;
  std::condition_variable changed_;
  bool borrowed_ = false;          // Guarded by mu_.
  bool loop_polling_ = false;      // The loop thread is in gRPC. Guarded by mu_.
  bool kick_pending_ = false;      // Guarded by mu_.
  bool returned_ = false;          // A borrower returned the queue since. Guarded by mu_.
  bool stopping_ = false;          // Guarded by mu_.
  Clock::time_point resume_at_{};  // Guarded by mu_.
  Kick kick_{this};
  grpc::Alarm kick_alarm_;
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_TRANSPORT_GRPC_CQ_LOOP_H_
