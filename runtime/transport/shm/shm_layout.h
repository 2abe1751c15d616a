// The layout of a worker's shared-memory segment. Each worker creates one segment
// (in /dev/shm) holding its doorbell and one inbound ring per peer; a peer on the
// same host maps the doorbell page and its own ring, and writes frames into it.
//
//   offset 0                      SegmentHeader (one page): identity, the doorbell
//   offset kPage + i * SlotBytes  slot i: RingHeader (one page) + ring data, the
//                                 frames rank i sends to the segment's owner
//
// Terms: the *producer* of a ring is the sending peer, the *consumer* its owner.
// `head` counts bytes the producer has published, `tail` bytes the consumer has
// released; both only grow, positions in the ring are taken modulo its capacity.
// Frames are a 64-byte header and the payload padded to 8 bytes, and both sides
// move data in multiples of 8 bytes, so every piece a sink sees holds whole
// elements.
#ifndef RINGWORK_RUNTIME_TRANSPORT_SHM_SHM_LAYOUT_H_
#define RINGWORK_RUNTIME_TRANSPORT_SHM_SHM_LAYOUT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "runtime/transport/doorbell.h"

namespace ringwork {

inline constexpr size_t kShmPage = 4096;
inline constexpr uint32_t kShmMagic = 0x4d535752;  // "RWSM"
inline constexpr uint32_t kShmVersion = 2;

struct SegmentHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t world_size;
  uint32_t owner_rank;
  uint64_t ring_bytes;
  int32_t owner_pid;
  alignas(64) DoorbellWord bell;  // The owner's doorbell: peers ring it.
};
static_assert(sizeof(SegmentHeader) <= kShmPage, "segment header must fit a page");

// Why a side aborted (its first error), written before it sets its closed flag
// (release), read by the other side after it sees the flag (acquire): so a peer
// that stops because of a third worker passes that root cause on.
struct AbortCause {
  int32_t code;     // absl::StatusCode; 0: none given.
  uint32_t length;  // Bytes of `message` in use.
  char message[1016];
};

struct RingHeader {
  alignas(64) std::atomic<uint64_t> head;  // Written by the producer.
  alignas(64) std::atomic<uint64_t> tail;  // Written by the consumer.
  // Set when a side aborts, so the other stops waiting at once.
  alignas(64) std::atomic<uint32_t> producer_closed;
  std::atomic<uint32_t> consumer_closed;
  alignas(64) AbortCause producer_cause;  // Each written only by its side.
  alignas(64) AbortCause consumer_cause;
};
static_assert(sizeof(RingHeader) <= kShmPage, "ring header must fit a page");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared rings need lock-free atomics");

inline size_t ShmSlotBytes(size_t ring_bytes) { return kShmPage + ring_bytes; }
inline size_t ShmSlotOffset(int slot, size_t ring_bytes) {
  return kShmPage + static_cast<size_t>(slot) * ShmSlotBytes(ring_bytes);
}
inline size_t ShmSegmentBytes(int world_size, size_t ring_bytes) {
  return ShmSlotOffset(world_size, ring_bytes);
}
inline size_t PadTo8(size_t bytes) { return (bytes + 7) & ~size_t{7}; }

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_TRANSPORT_SHM_SHM_LAYOUT_H_
