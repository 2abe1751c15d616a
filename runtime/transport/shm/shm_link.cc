#include "runtime/transport/shm/shm_link.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace ringwork {

ShmLink::ShmLink(const Rings& rings, int self_rank, std::shared_ptr<PeerLiveness> liveness,
                 size_t max_payload_bytes)
    : rings_(rings),
      peer_bell_(rings.peer_bell),
      liveness_(std::move(liveness)),
      max_payload_bytes_(max_payload_bytes),
      producer_(rings.out_header, rings.out_data, rings.ring_bytes, self_rank, &peer_bell_),
      consumer_(rings.in_header, rings.in_data, rings.ring_bytes, max_payload_bytes, &peer_bell_) {}

void ShmLink::PostSend(Request* request) {
  producer_.Post(request);
  producer_.Poll();  // Start copying now: the peer may be waiting already.
}

void ShmLink::PostRecv(Request* request) { consumer_.Post(request); }

namespace {

void WriteCause(const absl::Status& cause, AbortCause* out) {
  const size_t length = std::min(cause.message().size(), sizeof(out->message));
  std::memcpy(out->message, cause.message().data(), length);
  out->length = static_cast<uint32_t>(length);
  out->code = static_cast<int32_t>(cause.code());
}

absl::Status ReadCause(const AbortCause& in) {
  if (in.code <= 0 || in.code > static_cast<int32_t>(absl::StatusCode::kUnauthenticated)) {
    return absl::OkStatus();
  }
  const size_t length = std::min<size_t>(in.length, sizeof(in.message));
  return absl::Status(static_cast<absl::StatusCode>(in.code),
                      absl::string_view(in.message, length));
}

}  // namespace

bool ShmLink::Poll() {
  if (producer_.idle() && consumer_.idle()) return false;
  // Read the peer's state before the rings: data it wrote before it went away is
  // still taken.
  const bool peer_closed_in = rings_.in_header->producer_closed.load(std::memory_order_acquire);
  const bool peer_closed_out = rings_.out_header->consumer_closed.load(std::memory_order_acquire);
  const bool peer_gone = liveness_->gone() || peer_closed_in || peer_closed_out;
  // A peer that aborted (and said why) fails what waits at once, even if some of
  // its data is still in the ring: its collective is over.
  if (peer_gone) {
    const absl::Status cause = PeerCause();
    const Request* waiting = !consumer_.idle() ? consumer_.front() : producer_.front();
    if (!cause.ok() && waiting != nullptr) {
      env_.fail(PeerClosedError(peer_name_, env_.self_name, waiting->key, cause));
      return true;
    }
  }
  bool moved = producer_.Poll();
  absl::StatusOr<bool> received =
      consumer_.Poll([this](const FrameHeader& got, const Request& expected) {
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
      env_.fail(PeerClosedError(peer_name_, env_.self_name, waiting->key, PeerCause()));
      return true;
    }
  }
  return moved;
}

absl::Status ShmLink::PeerCause() const {
  // The peer's own account first (it aborted), else what its gRPC link saw.
  absl::Status cause;
  if (rings_.in_header->producer_closed.load(std::memory_order_acquire)) {
    cause = ReadCause(rings_.in_header->producer_cause);
  }
  if (cause.ok() && rings_.out_header->consumer_closed.load(std::memory_order_acquire)) {
    cause = ReadCause(rings_.out_header->consumer_cause);
  }
  if (cause.ok()) cause = liveness_->cause();
  return cause;
}

void ShmLink::FailPending(const absl::Status& status, Deadline) {
  producer_.FailAll(status);
  consumer_.FailAll(status);
}

void ShmLink::OnAbort(const absl::Status& cause) {
  WriteCause(cause, &rings_.out_header->producer_cause);
  WriteCause(cause, &rings_.in_header->consumer_cause);
  rings_.out_header->producer_closed.store(1, std::memory_order_release);
  rings_.in_header->consumer_closed.store(1, std::memory_order_release);
  peer_bell_.Ring();
}

std::string ShmLink::DebugString() const {
  return absl::StrCat(consumer_.idle() ? "no receive" : "a receive", " pending, ",
                      producer_.idle() ? "no send" : "sends", " pending; ring head/tail out ",
                      rings_.out_header->head.load(), "/", rings_.out_header->tail.load(), ", in ",
                      rings_.in_header->head.load(), "/", rings_.in_header->tail.load());
}

}  // namespace ringwork
