#include "runtime/transport/shm/shm_link.h"

#include "absl/strings/str_cat.h"

namespace ringwork {

ShmLink::ShmLink(const Rings& rings, int self_rank, std::shared_ptr<PeerLiveness> liveness,
                 size_t max_payload_bytes)
    : rings_(rings),
      peer_bell_(rings.peer_bell),
      liveness_(std::move(liveness)),
      max_payload_bytes_(max_payload_bytes),
      producer_(rings.out_header, rings.out_data, rings.ring_bytes, self_rank, &peer_bell_),
      consumer_(rings.in_header, rings.in_data, rings.ring_bytes, max_payload_bytes,
                &peer_bell_) {}

void ShmLink::PostSend(Request* request) {
  producer_.Post(request);
  producer_.Poll();  // Start copying now: the peer may be waiting already.
}

void ShmLink::PostRecv(Request* request) { consumer_.Post(request); }

bool ShmLink::Poll() {
  if (producer_.idle() && consumer_.idle()) return false;
  // Read the peer's state before the rings: data it wrote before it went away is
  // still taken.
  const bool peer_gone = liveness_->gone() ||
                         rings_.out_header->consumer_closed.load(std::memory_order_acquire) ||
                         rings_.in_header->producer_closed.load(std::memory_order_acquire);
  bool moved = producer_.Poll();
  absl::StatusOr<bool> received = consumer_.Poll(
      [this](const FrameHeader& got, const Request& expected) {
        return CheckFrame(got, expected);
      });
  if (!received.ok()) {
    env_.fail(received.status());
    return true;
  }
  moved = moved || *received;
  if (!moved && peer_gone) {
    const Request* waiting = !consumer_.idle() ? consumer_.front() : producer_.front();
    if (waiting != nullptr) {
      env_.fail(PeerClosedError(peer_name_, env_.self_name, waiting->key, liveness_->cause()));
      return true;
    }
  }
  return moved;
}

void ShmLink::FailPending(const absl::Status& status, Deadline) {
  producer_.FailAll(status);
  consumer_.FailAll(status);
}

void ShmLink::OnAbort(const absl::Status&) {
  rings_.out_header->producer_closed.store(1, std::memory_order_release);
  rings_.in_header->consumer_closed.store(1, std::memory_order_release);
  peer_bell_.Ring();
}

std::string ShmLink::DebugString() const {
  return absl::StrCat(consumer_.idle() ? "no receive" : "a receive", " pending, ",
                      producer_.idle() ? "no send" : "sends", " pending; ring head/tail out ",
                      rings_.out_header->head.load(), "/", rings_.out_header->tail.load(),
                      ", in ", rings_.in_header->head.load(), "/",
                      rings_.in_header->tail.load());
}

}  // namespace ringwork
