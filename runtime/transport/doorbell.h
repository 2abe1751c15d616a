// A doorbell: how a thread that waits for data sleeps without missing a wake-up.
// Whoever changes something the waiter may be waiting for (a frame arrived, a send
// completed, space freed in a shared-memory ring, an abort) rings it; the waiter
// reads the count, checks its condition, and sleeps only if the count has not
// moved since (an "eventcount" over a futex).
//
// The word may live in shared memory, so that processes on one host ring each
// other's doorbells; ringing costs one atomic add, plus a futex wake only when
// somebody sleeps.
//
//   DoorbellWord word;              // in shared memory, or anywhere
//   Doorbell bell(&word);
//   uint32_t seen = bell.Observe();
//   if (!ready()) bell.Sleep(seen, absl::Milliseconds(50));
//   ... elsewhere: make ready() true, then bell.Ring();
#ifndef RINGWORK_RUNTIME_TRANSPORT_DOORBELL_H_
#define RINGWORK_RUNTIME_TRANSPORT_DOORBELL_H_

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"

namespace ringwork {

struct DoorbellWord {
  std::atomic<uint32_t> count{0};
  std::atomic<uint32_t> sleepers{0};
};
static_assert(std::atomic<uint32_t>::is_always_lock_free,
              "doorbells in shared memory need lock-free atomics");

class Doorbell {
 public:
  explicit Doorbell(DoorbellWord* word) : word_(word) {}  // Not owned.

  uint32_t Observe() const { return word_->count.load(std::memory_order_seq_cst); }
  void Ring();
  // Sleeps until rung after `observed` was read, or for at most `max`.
  void Sleep(uint32_t observed, absl::Duration max);

 private:
  DoorbellWord* word_;
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_TRANSPORT_DOORBELL_H_
