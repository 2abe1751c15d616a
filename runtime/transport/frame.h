// The frame: the unit every link moves between two ranks. A 64-byte header, then
// `payload_bytes` of tensor data. The header says which collective, step and segment
// the payload belongs to and what the sender thinks the collective is, so that a
// receiver can refuse data from a worker that is out of step or disagrees.
//
// Terms: a *collective* is one call (all-reduce #12) with a sequence number `seq`
// that every rank assigns identically; a *step* is one round of its algorithm; a
// *segment* is one piece of the data moved in that step (large data is split so
// that sending, receiving and reducing overlap).
//
//   FrameHeader h = MakeFrameHeader(request, sender_rank);
//   EncodeFrameHeader(h, bytes);                   // 64 bytes, little-endian
//   absl::StatusOr<FrameHeader> got = DecodeFrameHeader(bytes, size);
//   absl::Status st = CheckFrameMatches(*got, request, peer);
#ifndef RINGWORK_RUNTIME_TRANSPORT_FRAME_H_
#define RINGWORK_RUNTIME_TRANSPORT_FRAME_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "tensor/dtype.h"
#include "tensor/reduce.h"

namespace ringwork {

// Numeric values are part of the wire format: never renumber.
enum class CollectiveKind : uint8_t {
  kAllReduce = 1,
  kBroadcast = 2,
  kAllGather = 3,
  kReduceScatter = 4,
  kBarrier = 5,
};

absl::string_view CollectiveKindName(CollectiveKind kind);

// What a collective is, as every participant must agree on it.
struct CollectiveInfo {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;  // Ignored unless the kind reduces.
  uint64_t count = 0;            // Elements per rank.
  int32_t root = -1;             // Broadcast's root; -1 otherwise.

  bool operator==(const CollectiveInfo& o) const;
  bool operator!=(const CollectiveInfo& o) const { return !(*this == o); }
  // "allreduce(float32 x 1000, sum)", "broadcast(int64 x 3, root 2)", "barrier".
  std::string ToString() const;
};

// Identifies one frame between a pair of ranks.
struct FrameKey {
  uint64_t seq = 0;
  uint32_t step = 0;
  uint32_t segment = 0;

  bool operator==(const FrameKey& o) const {
    return seq == o.seq && step == o.step && segment == o.segment;
  }
  std::string ToString() const;  // "#12 step 3 segment 0"
};

inline constexpr uint32_t kFrameMagic = 0x31465752;  // "RWF1"
inline constexpr uint16_t kFrameVersion = 1;
inline constexpr size_t kFrameHeaderBytes = 64;

struct FrameHeader {
  uint32_t sender_rank = 0;
  FrameKey key;
  CollectiveInfo info;
  uint64_t payload_bytes = 0;
};

void EncodeFrameHeader(const FrameHeader& header, uint8_t out[kFrameHeaderBytes]);

// Decodes and validates the fields on their own (magic, version, enum values,
// payload no larger than `max_payload_bytes`), before anything is sized from them.
absl::StatusOr<FrameHeader> DecodeFrameHeader(const uint8_t* data, size_t size,
                                              uint64_t max_payload_bytes);

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_TRANSPORT_FRAME_H_
