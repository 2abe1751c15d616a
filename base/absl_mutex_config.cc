// Debian builds absl without NDEBUG, which turns on absl::Mutex's deadlock
// detector. Its lock-order graph lives in a global arena that we saw corrupted when
// mutexes are created and destroyed on many threads at once ("RAW: Check e ==
// found failed: element not in freelist", then a crash). gRPC's internal mutexes
// are absl::Mutex. Release builds of absl ship with the detector off; this makes
// ours match. Ringwork's own code uses std::mutex, which ThreadSanitizer
// understands (`bazel test --config=tsan`); absl::Mutex from Debian's
// uninstrumented library it does not.
#include "absl/synchronization/mutex.h"

namespace ringwork {
namespace {

const bool kDeadlockDetectionOff = [] {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return true;
}();

}  // namespace
}  // namespace ringwork
