// CompletionQueueLoop on a real gRPC completion queue (alarms are real queue
// events): the loop thread delivers while nobody borrows the queue; a borrower
// delivers on its own thread while it holds it; the loop thread resumes after the
// linger (or at once); shutdown delivers what is left.
#include "runtime/transport/grpc/cq_loop.h"

#include <grpc/support/time.h>
#include <grpcpp/alarm.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

namespace ringwork {
namespace {

using Clock = std::chrono::steady_clock;

// Records which thread delivered it, and whether as a borrower.
class Recorder : public CqTag {
 public:
  void OnEvent(bool ok) override {
    ok_ = ok;
    thread_ = std::this_thread::get_id();
    to_borrower_ = CompletionQueueLoop::DeliveringToBorrower();
    delivered_.store(true);
  }
  void Reset() {
    delivered_.store(false);
    thread_ = std::thread::id();
  }
  bool delivered() const { return delivered_.load(); }
  std::thread::id thread() const { return thread_; }
  bool to_borrower() const { return to_borrower_; }
  bool ok() const { return ok_; }

 private:
  std::atomic<bool> delivered_{false};
  std::thread::id thread_;
  bool to_borrower_ = false;
  bool ok_ = false;
};

void FireNow(grpc::Alarm* alarm, grpc::CompletionQueue* cq, Recorder* tag) {
  tag->Reset();
  alarm->Set(cq, gpr_inf_past(GPR_CLOCK_MONOTONIC), tag);
}

bool WaitDelivered(const Recorder& tag, std::chrono::milliseconds limit) {
  const auto until = Clock::now() + limit;
  while (!tag.delivered() && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return tag.delivered();
}

TEST_CASE("the loop thread delivers unless a borrower holds the queue", "[grpc]") {
  grpc::CompletionQueue cq;
  // Declared before the loop, whose thread uses them until it is joined.
  std::atomic<int> resumes{0};
  std::atomic<std::thread::id> resumed_on{};
  grpc::Alarm alarm;
  Recorder tag;
  CompletionQueueLoop::Options options;
  options.linger_ms = 50;
  CompletionQueueLoop loop(&cq, options);
  loop.set_on_resume([&] {
    resumed_on = std::this_thread::get_id();
    ++resumes;
  });
  loop.Start();
  const std::thread::id me = std::this_thread::get_id();

  FireNow(&alarm, &cq, &tag);
  REQUIRE(WaitDelivered(tag, std::chrono::seconds(5)));
  CHECK(tag.ok());
  CHECK(tag.thread() != me);
  CHECK_FALSE(tag.to_borrower());

  loop.Borrow();
  // While the loop thread leaves gRPC it may still take events: when the borrower
  // took the kick off the queue, the loop thread's poll runs to its end (within a
  // linger). Every event is delivered meanwhile, by one thread or the other.
  auto deliver = [&] {
    FireNow(&alarm, &cq, &tag);
    const auto until = Clock::now() + std::chrono::seconds(5);
    while (!tag.delivered() && Clock::now() < until) loop.PollBlocking(absl::Milliseconds(10));
    REQUIRE(tag.delivered());
  };
  for (int i = 0; i < 10; ++i) deliver();

  // Borrowed for longer than a linger: the loop thread has left gRPC by now and
  // parked; until then PollBlocking does not block. From here on every event is
  // the borrower's.
  const auto parked = Clock::now() + std::chrono::milliseconds(150);
  while (Clock::now() < parked) loop.PollBlocking(absl::Milliseconds(10));
  for (int i = 0; i < 10; ++i) {
    deliver();
    CHECK(tag.thread() == me);
    CHECK(tag.to_borrower());
  }

  CHECK(resumes == 0);  // Never returned yet.
  SECTION("nothing pending: Poll returns at once, PollBlocking after its time") {
    const auto start = Clock::now();
    CHECK_FALSE(loop.Poll());
    CHECK(Clock::now() - start < std::chrono::milliseconds(50));
    const auto blocked = Clock::now();
    CHECK_FALSE(loop.PollBlocking(absl::Milliseconds(20)));
    const auto took = Clock::now() - blocked;
    CHECK(took >= std::chrono::milliseconds(15));
    CHECK(took < std::chrono::seconds(2));
    loop.Return(/*resume_now=*/true);
  }
  SECTION("after a return the loop thread resumes once the linger has passed") {
    loop.Return(/*resume_now=*/false);
    const auto returned = Clock::now();
    FireNow(&alarm, &cq, &tag);
    REQUIRE(WaitDelivered(tag, std::chrono::seconds(5)));
    CHECK(tag.thread() != me);
    // Not before the linger (50 ms; the loop looks again every linger).
    CHECK(Clock::now() - returned >= std::chrono::milliseconds(40));
    CHECK_FALSE(tag.to_borrower());
    // Taking the queue back, it ran the resume work once, on its own thread.
    CHECK(resumes == 1);
    CHECK(resumed_on.load() == tag.thread());
  }
  SECTION("a return with resume_now hands the queue back at once") {
    loop.Return(/*resume_now=*/true);
    FireNow(&alarm, &cq, &tag);
    REQUIRE(WaitDelivered(tag, std::chrono::seconds(5)));
    CHECK(tag.thread() != me);
  }
  loop.ShutdownAndJoin();
}

TEST_CASE("shutdown delivers the events still queued", "[grpc]") {
  grpc::CompletionQueue cq;
  CompletionQueueLoop loop(&cq);
  loop.Start();
  loop.Borrow();  // The loop thread parks; nobody polls.
  grpc::Alarm alarm;
  Recorder tag;
  FireNow(&alarm, &cq, &tag);
  loop.Return(/*resume_now=*/false);
  loop.ShutdownAndJoin();
  CHECK(tag.delivered());
}

}  // namespace
}  // namespace ringwork
