#include "runtime/transport/shm/shm_ring.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"

namespace ringwork {

ShmRingProducer::ShmRingProducer(RingHeader* header, uint8_t* data, size_t capacity,
                                 int sender_rank, Doorbell* consumer_bell, size_t publish_bytes)
    : header_(header),
      data_(data),
      capacity_(capacity),
      sender_rank_(sender_rank),
      consumer_bell_(consumer_bell),
      publish_bytes_(publish_bytes) {
  RW_CHECK_EQ(capacity & (capacity - 1), 0u) << "ring capacity must be a power of two";
  head_ = header_->head.load(std::memory_order_relaxed);
  tail_seen_ = header_->tail.load(std::memory_order_acquire);
}

void ShmRingProducer::CopyIn(uint64_t position, const uint8_t* src, size_t bytes) {
  const size_t at = static_cast<size_t>(position & (capacity_ - 1));
  const size_t first = std::min(bytes, capacity_ - at);
  std::memcpy(data_ + at, src, first);
  if (first < bytes) std::memcpy(data_, src + first, bytes - first);
}

bool ShmRingProducer::Poll() {
  bool moved = false;
  while (!queue_.empty()) {
    Request* send = queue_.front();
    auto free_bytes = [&] { return capacity_ - static_cast<size_t>(head_ - tail_seen_); };
    if (!header_written_) {
      if (free_bytes() < kFrameHeaderBytes) {
        tail_seen_ = header_->tail.load(std::memory_order_acquire);
        if (free_bytes() < kFrameHeaderBytes) break;
      }
      FrameHeader frame;
      frame.sender_rank = static_cast<uint32_t>(sender_rank_);
      frame.key = send->key;
      frame.info = send->info;
      frame.payload_bytes = send->bytes;
      uint8_t bytes[kFrameHeaderBytes];
      EncodeFrameHeader(frame, bytes);
      CopyIn(head_, bytes, kFrameHeaderBytes);
      head_ += kFrameHeaderBytes;
      header_written_ = true;
      payload_written_ = 0;
      header_->head.store(head_, std::memory_order_release);
      if (consumer_bell_ != nullptr) consumer_bell_->Ring();
      moved = true;
    }
    const size_t padded = PadTo8(send->bytes);
    while (payload_written_ < padded) {
      if (free_bytes() < 8) {
        tail_seen_ = header_->tail.load(std::memory_order_acquire);
        if (free_bytes() < 8) break;
      }
      // Whole 8-byte units only, so the consumer never sees half an element.
      size_t take = std::min({free_bytes(), padded - payload_written_, publish_bytes_});
      take &= ~size_t{7};
      const size_t real = std::min(take, send->bytes - std::min(send->bytes, payload_written_));
      if (real > 0) {
        CopyIn(head_, static_cast<const uint8_t*>(send->data) + payload_written_, real);
      }
      head_ += take;  // The padding after the last byte is left as it was.
      payload_written_ += take;
      send->progress = std::min(payload_written_, send->bytes);
      header_->head.store(head_, std::memory_order_release);
      if (consumer_bell_ != nullptr) consumer_bell_->Ring();
      moved = true;
    }
    if (payload_written_ < padded) break;
    header_written_ = false;
    queue_.pop_front();
    CompleteRequest(send, absl::OkStatus());
  }
  return moved;
}

void ShmRingProducer::FailAll(const absl::Status& status) {
  while (Request* r = queue_.pop_front()) CompleteRequest(r, status);
}

ShmRingConsumer::ShmRingConsumer(RingHeader* header, uint8_t* data, size_t capacity,
                                 size_t max_payload_bytes, Doorbell* producer_bell)
    : header_(header),
      data_(data),
      capacity_(capacity),
      max_payload_bytes_(max_payload_bytes),
      producer_bell_(producer_bell) {
  RW_CHECK_EQ(capacity & (capacity - 1), 0u) << "ring capacity must be a power of two";
  tail_ = header_->tail.load(std::memory_order_relaxed);
  head_seen_ = tail_;
}

void ShmRingConsumer::CopyOut(uint64_t position, uint8_t* dst, size_t bytes) const {
  const size_t at = static_cast<size_t>(position & (capacity_ - 1));
  const size_t first = std::min(bytes, capacity_ - at);
  std::memcpy(dst, data_ + at, first);
  if (first < bytes) std::memcpy(dst + first, data_, bytes - first);
}

void ShmRingConsumer::Feed(Request* request, uint64_t position, size_t bytes, size_t offset) {
  const size_t at = static_cast<size_t>(position & (capacity_ - 1));
  const size_t first = std::min(bytes, capacity_ - at);
  request->sink.consume(request->sink.context, offset, data_ + at, first);
  if (first < bytes) {
    request->sink.consume(request->sink.context, offset + first, data_, bytes - first);
  }
}

void ShmRingConsumer::FailAll(const absl::Status& status) {
  while (Request* r = queue_.pop_front()) CompleteRequest(r, status);
}

}  // namespace ringwork
