// Whether a peer is still there, as far as this process knows. The gRPC link sets
// it when the peer's stream ends or breaks; a shared-memory link to the same peer,
// which has no connection of its own to watch, checks it while it waits.
#ifndef RINGWORK_RUNTIME_TRANSPORT_PEER_LIVENESS_H_
#define RINGWORK_RUNTIME_TRANSPORT_PEER_LIVENESS_H_

#include <atomic>
#include <mutex>

#include "absl/status/status.h"

namespace ringwork {

class PeerLiveness {
 public:
  bool gone() const { return gone_.load(std::memory_order_acquire); }
  // Records that the peer is gone; the first cause the peer gave wins (a later one
  // replaces "no cause": the end of one stream may arrive before the other stream
  // delivers the peer's reason). Thread-safe.
  void MarkGone(const absl::Status& cause) {
    std::lock_guard<std::mutex> lock(mu_);
    if (gone_.load() && (!cause_.ok() || cause.ok())) return;
    cause_ = cause;
    gone_.store(true, std::memory_order_release);
  }
  // Why the peer is gone: OK when it did not say (it crashed or closed cleanly).
  absl::Status cause() const {
    std::lock_guard<std::mutex> lock(mu_);
    return cause_;
  }

 private:
  mutable std::mutex mu_;
  absl::Status cause_;  // Guarded by mu_.
  std::atomic<bool> gone_{false};
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_TRANSPORT_PEER_LIVENESS_H_
