// The two ends of one shared-memory ring (shm_layout.h): a producer that streams
// frames in, and a consumer that matches them to posted receives and hands the
// bytes to their sinks straight from the ring. Neither blocks: each Poll moves what
// it can and returns; the Transport's wait loop calls them again when a doorbell
// rings. Each end is used by one thread.
#ifndef RINGWORK_RUNTIME_TRANSPORT_SHM_SHM_RING_H_
#define RINGWORK_RUNTIME_TRANSPORT_SHM_SHM_RING_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "runtime/transport/doorbell.h"
#include "runtime/transport/frame.h"
#include "runtime/transport/request.h"
#include "runtime/transport/shm/shm_layout.h"

namespace ringwork {

// Copies frames into the ring. The payload is copied out of the caller's buffer as
// space allows, in pieces of at most `publish_bytes`, so the consumer can start
// on a frame before all of it is in.
class ShmRingProducer {
 public:
  // `consumer_bell` is rung whenever bytes are published. Not owned.
  ShmRingProducer(RingHeader* header, uint8_t* data, size_t capacity, int sender_rank,
                  Doorbell* consumer_bell, size_t publish_bytes = 64 << 10);

  void Post(Request* request) { queue_.push_back(request); }
  bool idle() const { return queue_.empty(); }
  // Moves bytes of queued frames into the ring; completes each request whose bytes
  // are all in. Returns true if it moved anything.
  bool Poll();
  // Completes every queued request with `status`.
  void FailAll(const absl::Status& status);
  const Request* front() const { return queue_.front(); }

 private:
  void CopyIn(uint64_t position, const uint8_t* src, size_t bytes);

  RingHeader* header_;  // Not owned.
  uint8_t* data_;       // Not owned.
  const size_t capacity_;
  const int sender_rank_;
  Doorbell* consumer_bell_;  // Not owned.
  const size_t publish_bytes_;
  uint64_t head_ = 0;       // Our copy of header_->head.
  uint64_t tail_seen_ = 0;  // Last tail read from the consumer.
  bool header_written_ = false;
  size_t payload_written_ = 0;  // Of the front request, padded bytes.
  RequestQueue queue_;
};

// Takes frames out of the ring for posted receives, in order.
class ShmRingConsumer {
 public:
  // `producer_bell` is rung whenever space is freed. Not owned.
  ShmRingConsumer(RingHeader* header, uint8_t* data, size_t capacity, size_t max_payload_bytes,
                  Doorbell* producer_bell);

  void Post(Request* request) { queue_.push_back(request); }
  bool idle() const { return queue_.empty(); }
  const Request* front() const { return queue_.front(); }
  // Feeds arrived bytes to the front receive's sink; completes receives whose
  // frames are complete. A frame that is not the one the front receive expects is
  // returned as an error by `check` (the caller's Link::CheckFrame). Returns true
  // if anything moved.
  template <typename CheckFn>
  absl::StatusOr<bool> Poll(const CheckFn& check);
  void FailAll(const absl::Status& status);

 private:
  void CopyOut(uint64_t position, uint8_t* dst, size_t bytes) const;
  // Runs the sink over `bytes` ring bytes at `position` (one or two pieces).
  void Feed(Request* request, uint64_t position, size_t bytes, size_t offset);

  RingHeader* header_;  // Not owned.
  uint8_t* data_;       // Not owned.
  const size_t capacity_;
  const size_t max_payload_bytes_;
  Doorbell* producer_bell_;   // Not owned.
  uint64_t tail_ = 0;         // Our copy of header_->tail.
  uint64_t head_seen_ = 0;    // Last head read from the producer.
  bool in_frame_ = false;     // A header was taken; its payload is under way.
  size_t payload_taken_ = 0;  // Of the front request, padded bytes.
  RequestQueue queue_;
};

template <typename CheckFn>
absl::StatusOr<bool> ShmRingConsumer::Poll(const CheckFn& check) {
  bool moved = false;
  auto available = [&](size_t wanted) {
    if (head_seen_ - tail_ < wanted) head_seen_ = header_->head.load(std::memory_order_acquire);
    return static_cast<size_t>(head_seen_ - tail_);
  };
  while (!queue_.empty()) {
    Request* recv = queue_.front();
    if (!in_frame_) {
      if (available(kFrameHeaderBytes) < kFrameHeaderBytes) break;
      uint8_t bytes[kFrameHeaderBytes];
      CopyOut(tail_, bytes, kFrameHeaderBytes);
      absl::StatusOr<FrameHeader> frame =
          DecodeFrameHeader(bytes, kFrameHeaderBytes, max_payload_bytes_);
      if (!frame.ok()) return frame.status();
      absl::Status matches = check(*frame, *recv);
      if (!matches.ok()) return matches;
      tail_ += kFrameHeaderBytes;
      in_frame_ = true;
      payload_taken_ = 0;
      moved = true;
    }
    const size_t padded = PadTo8(recv->bytes);
    if (payload_taken_ < padded) {
      const size_t take = std::min(available(padded - payload_taken_), padded - payload_taken_);
      if (take == 0) break;
      const size_t real = std::min(take, recv->bytes - std::min(recv->bytes, payload_taken_));
      if (real > 0) Feed(recv, tail_, real, payload_taken_);
      tail_ += take;
      payload_taken_ += take;
      recv->progress = std::min(payload_taken_, recv->bytes);
      header_->tail.store(tail_, std::memory_order_release);
      if (producer_bell_ != nullptr) producer_bell_->Ring();
      moved = true;
    }
    if (payload_taken_ < padded) break;
    in_frame_ = false;
    queue_.pop_front();
    CompleteRequest(recv, absl::OkStatus());
  }
  if (moved) {
    header_->tail.store(tail_, std::memory_order_release);
    if (producer_bell_ != nullptr) producer_bell_->Ring();
  }
  return moved;
}

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_TRANSPORT_SHM_SHM_RING_H_
