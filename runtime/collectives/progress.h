// How far one worker has got: its training step and its collectives. Written by the
// threads that train and run collectives, read without locks by the heartbeat
// thread, which reports it to peers (for their stall reports) and watches it for
// this worker's own stalls.
//
//   progress.set_step(17);
//   progress.CollectiveStarted();   ... progress.CollectiveFinished();
//   if (progress.CurrentCollectiveSeconds() > 60) { ...report... }
#ifndef RINGWORK_RUNTIME_COLLECTIVES_PROGRESS_H_
#define RINGWORK_RUNTIME_COLLECTIVES_PROGRESS_H_

#include <atomic>
#include <chrono>
#include <cstdint>

namespace ringwork {

class Progress {
 public:
  // The training step in progress; -1 before the first.
  void set_step(int64_t step) { step_.store(step, std::memory_order_relaxed); }
  int64_t step() const { return step_.load(std::memory_order_relaxed); }

  void CollectiveStarted() {
    current_start_ns_.store(NowNs(), std::memory_order_relaxed);
    started_.fetch_add(1, std::memory_order_release);
  }
  void CollectiveFinished() {
    current_start_ns_.store(0, std::memory_order_relaxed);
    finished_.fetch_add(1, std::memory_order_release);
  }
  // Collectives started and finished so far; collective #k (0-based) has started
  // when started() > k.
  uint64_t started() const { return started_.load(std::memory_order_acquire); }
  uint64_t finished() const { return finished_.load(std::memory_order_acquire); }
  // How long the collective in progress has been running; 0 when none is.
  double CurrentCollectiveSeconds() const {
    const int64_t start = current_start_ns_.load(std::memory_order_relaxed);
    return start == 0 ? 0.0 : static_cast<double>(NowNs() - start) * 1e-9;
  }

 private:
  static int64_t NowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  std::atomic<int64_t> step_{-1};
  std::atomic<uint64_t> started_{0};
  std::atomic<uint64_t> finished_{0};
  std::atomic<int64_t> current_start_ns_{0};
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_COLLECTIVES_PROGRESS_H_
