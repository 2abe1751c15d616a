// libFuzzer target: the frame (chunk) header validator every received frame goes
// through before anything is sized from it. A header it accepts has a payload
// within the limit and valid enums, and encodes back to a header that decodes
// to the same fields.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "runtime/transport/frame.h"

namespace {
constexpr uint64_t kMaxPayload = 1 << 20;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<ringwork::FrameHeader> header =
      ringwork::DecodeFrameHeader(data, size, kMaxPayload);
  if (!header.ok()) {
    if (header.status().message().empty()) std::abort();
    return 0;
  }
  if (size < ringwork::kFrameHeaderBytes || header->payload_bytes > kMaxPayload) std::abort();
  (void)header->info.ToString();
  (void)header->key.ToString();
  uint8_t encoded[ringwork::kFrameHeaderBytes];
  ringwork::EncodeFrameHeader(*header, encoded);
  absl::StatusOr<ringwork::FrameHeader> again =
      ringwork::DecodeFrameHeader(encoded, sizeof(encoded), kMaxPayload);
  if (!again.ok() || again->sender_rank != header->sender_rank || !(again->key == header->key) ||
      again->info != header->info || again->payload_bytes != header->payload_bytes) {
    std::abort();
  }
  return 0;
}
