#include "runtime/transport/doorbell.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace ringwork {
namespace {

// Shared (not FUTEX_PRIVATE) futex operations, so they work across processes that
// map the same page.
long Futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  return ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

}  // namespace

void Doorbell::Ring() {
  word_->count.fetch_add(1, std::memory_order_seq_cst);
  if (word_->sleepers.load(std::memory_order_seq_cst) != 0) {
    Futex(&word_->count, FUTEX_WAKE, INT_MAX, nullptr);
  }
}

void Doorbell::Sleep(uint32_t observed, absl::Duration max) {
  if (max <= absl::ZeroDuration()) return;
  word_->sleepers.fetch_add(1, std::memory_order_seq_cst);
  // A ring between Observe() and here changed the count: FUTEX_WAIT then returns
  // at once (EAGAIN), so no wake-up is lost.
  if (word_->count.load(std::memory_order_seq_cst) == observed) {
    const timespec timeout = absl::ToTimespec(max);
    Futex(&word_->count, FUTEX_WAIT, observed, &timeout);
  }
  word_->sleepers.fetch_sub(1, std::memory_order_seq_cst);
}

}  // namespace ringwork
