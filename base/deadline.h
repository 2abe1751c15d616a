// A point in time by which a wait must end. Every blocking wait in Ringwork takes
// one, so nothing waits forever.
//
//   Deadline deadline = Deadline::AfterSeconds(options.timeout_s);
//   while (!done) {
//     if (deadline.Expired()) return absl::DeadlineExceededError(...);
//     cv.WaitWithTimeout(&mu, deadline.RemainingOr(absl::Milliseconds(100)));
//   }
#ifndef RINGWORK_BASE_DEADLINE_H_
#define RINGWORK_BASE_DEADLINE_H_

#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/time/time.h"

namespace ringwork {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  // A deadline `seconds` from now. Non-finite or huge values mean "never";
  // callers use that only for tests that must not time out on a slow machine.
  static Deadline AfterSeconds(double seconds) {
    if (!std::isfinite(seconds) || seconds > 1e9) return Never();
    return Deadline(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(seconds)));
  }
  static Deadline Never() { return Deadline(Clock::time_point::max()); }
  static Deadline At(Clock::time_point when) { return Deadline(when); }

  bool Expired() const { return Clock::now() >= when_; }
  bool IsNever() const { return when_ == Clock::time_point::max(); }
  Clock::time_point when() const { return when_; }

  // Time left, never negative.
  absl::Duration Remaining() const {
    if (IsNever()) return absl::InfiniteDuration();
    auto left = when_ - Clock::now();
    if (left.count() <= 0) return absl::ZeroDuration();
    return absl::FromChrono(left);
  }
  // Time left, but at most `cap`: for waits that wake periodically to check
  // other conditions (aborts, peer liveness).
  absl::Duration RemainingOr(absl::Duration cap) const { return std::min(Remaining(), cap); }
  double RemainingSeconds() const { return absl::ToDoubleSeconds(Remaining()); }
  // The earlier of two deadlines.
  Deadline Min(const Deadline& other) const { return when_ <= other.when_ ? *this : other; }

 private:
  explicit Deadline(Clock::time_point when) : when_(when) {}
  Clock::time_point when_;
};

}  // namespace ringwork

#endif  // RINGWORK_BASE_DEADLINE_H_
