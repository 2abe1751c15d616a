#include "runtime/transport/frame.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace ringwork {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the frame format is little-endian; add byte swaps for this host");

// Field offsets within the 64-byte header.
constexpr size_t kMagic = 0, kVersion = 4, kHeaderSize = 6, kSender = 8, kStep = 12, kSeq = 16,
                 kSegment = 24, kKind = 28, kDtype = 29, kOp = 30, kCount = 32, kRoot = 40,
                 kPayload = 48;

template <typename T>
void Put(uint8_t* out, size_t offset, T value) {
  std::memcpy(out + offset, &value, sizeof(T));
}
template <typename T>
T Get(const uint8_t* in, size_t offset) {
  T value;
  std::memcpy(&value, in + offset, sizeof(T));
  return value;
}

}  // namespace

absl::string_view CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "allreduce";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kAllGather:
      return "allgather";
    case CollectiveKind::kReduceScatter:
      return "reducescatter";
    case CollectiveKind::kBarrier:
      return "barrier";
  }
  return "invalid";
}

bool CollectiveInfo::operator==(const CollectiveInfo& o) const {
  const bool reduces = kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kReduceScatter;
  return kind == o.kind && dtype == o.dtype && count == o.count && root == o.root &&
         (!reduces || op == o.op);
}

std::string CollectiveInfo::ToString() const {
  if (kind == CollectiveKind::kBarrier) return "barrier";
  std::string text = absl::StrCat(CollectiveKindName(kind), "(", DataTypeName(dtype), " x ", count);
  if (kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kReduceScatter) {
    absl::StrAppend(&text, ", ", ReduceOpName(op));
  }
  if (kind == CollectiveKind::kBroadcast) absl::StrAppend(&text, ", root ", root);
  return text + ")";
}

std::string FrameKey::ToString() const {
  return absl::StrCat("#", seq, " step ", step, " segment ", segment);
}

void EncodeFrameHeader(const FrameHeader& h, uint8_t out[kFrameHeaderBytes]) {
  std::memset(out, 0, kFrameHeaderBytes);
  Put<uint32_t>(out, kMagic, kFrameMagic);
  Put<uint16_t>(out, kVersion, kFrameVersion);
  Put<uint16_t>(out, kHeaderSize, kFrameHeaderBytes);
  Put<uint32_t>(out, kSender, h.sender_rank);
  Put<uint32_t>(out, kStep, h.key.step);
  Put<uint64_t>(out, kSeq, h.key.seq);
  Put<uint32_t>(out, kSegment, h.key.segment);
  Put<uint8_t>(out, kKind, static_cast<uint8_t>(h.info.kind));
  Put<uint8_t>(out, kDtype, static_cast<uint8_t>(h.info.dtype));
  Put<uint8_t>(out, kOp, static_cast<uint8_t>(h.info.op));
  Put<uint64_t>(out, kCount, h.info.count);
  Put<int32_t>(out, kRoot, h.info.root);
  Put<uint64_t>(out, kPayload, h.payload_bytes);
}

absl::StatusOr<FrameHeader> DecodeFrameHeader(const uint8_t* in, size_t size,
                                              uint64_t max_payload_bytes) {
  if (size < kFrameHeaderBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("frame of ", size, " bytes is shorter than its 64-byte header"));
  }
  const uint32_t magic = Get<uint32_t>(in, kMagic);
  if (magic != kFrameMagic) {
    return absl::InvalidArgumentError(
        absl::StrCat("frame has bad magic 0x", absl::Hex(magic), " (not a Ringwork peer?)"));
  }
  const uint16_t version = Get<uint16_t>(in, kVersion);
  if (version != kFrameVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("frame version ", version, " is not this build's version ", kFrameVersion,
                     "; run the same Ringwork build on every worker"));
  }
  if (Get<uint16_t>(in, kHeaderSize) != kFrameHeaderBytes) {
    return absl::InvalidArgumentError("frame header size field is not 64");
  }
  const uint8_t kind = Get<uint8_t>(in, kKind), dtype = Get<uint8_t>(in, kDtype),
                op = Get<uint8_t>(in, kOp);
  if (kind < 1 || kind > 5 || !IsValidDataType(dtype) || !IsValidReduceOp(op)) {
    return absl::InvalidArgumentError(
        absl::StrCat("frame header has invalid kind/dtype/op ", kind, "/", dtype, "/", op));
  }
  FrameHeader h;
  h.sender_rank = Get<uint32_t>(in, kSender);
  h.key.step = Get<uint32_t>(in, kStep);
  h.key.seq = Get<uint64_t>(in, kSeq);
  h.key.segment = Get<uint32_t>(in, kSegment);
  h.info.kind = static_cast<CollectiveKind>(kind);
  h.info.dtype = static_cast<DataType>(dtype);
  h.info.op = static_cast<ReduceOp>(op);
  h.info.count = Get<uint64_t>(in, kCount);
  h.info.root = Get<int32_t>(in, kRoot);
  h.payload_bytes = Get<uint64_t>(in, kPayload);
  if (h.payload_bytes > max_payload_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "frame announces ", h.payload_bytes, " payload bytes; the limit is ", max_payload_bytes));
  }
  if (h.payload_bytes % DataTypeSize(h.info.dtype) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("frame payload of ", h.payload_bytes,
                                                   " bytes is not a whole number of ",
                                                   DataTypeName(h.info.dtype), " elements"));
  }
  return h;
}

}  // namespace ringwork
