// Small conversions between gRPC's types and ours.
#ifndef RINGWORK_RUNTIME_TRANSPORT_GRPC_GRPC_UTIL_H_
#define RINGWORK_RUNTIME_TRANSPORT_GRPC_GRPC_UTIL_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "base/deadline.h"

namespace ringwork {

// gRPC deadlines are system-clock times; ours are steady-clock ones.
inline std::chrono::system_clock::time_point ToSystemTime(const Deadline& deadline) {
  if (deadline.IsNever()) {
    return std::chrono::system_clock::now() + std::chrono::hours(24 * 365);
  }
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(deadline.when() -
                                                                         Deadline::Clock::now());
}

// The same code and message (gRPC's codes are absl's).
inline absl::Status FromGrpcStatus(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

// HTTP/2 settings for the long-lived data streams, on the servers (which receive
// the frames) and the channels alike. Measured on a 2-core VM, 2 workers, 16 MiB
// all-reduce over gRPC: 43 ms with gRPC's defaults, 8.7 ms with these and 1 MiB
// frames (see docs/performance/communication.md). Large HTTP/2 frames avoid cutting every
// message into 16 KiB pieces. The lookahead sets each stream's window (16 MiB,
// unless the probe is on: then the probe sizes both, at least 4 MiB); without the
// bandwidth-delay probe the connection's window stays at HTTP/2's
// 64 KiB (gRPC 1.51 moves it only from the probe), so a message over about
// 64 KiB waits one round trip for a WINDOW_UPDATE. With the probe on that wait
// goes (64 KiB all-reduce on loopback 100 -> 52-59 us), but all-reduces of 4 MiB
// and more were 1.1-2.2x slower under this VM's BBR: off by default (docs/PERFORMANCE.md,
// 2026-12-05). `bdp_probe` (--grpc_bdp_probe) turns it on: a worker's setting
// governs the windows it announces, so peers may differ.
inline std::vector<std::pair<const char*, int>> DataStreamChannelSettings(bool bdp_probe) {
  return {
      {GRPC_ARG_HTTP2_MAX_FRAME_SIZE, (16 << 20) - 1},
      {GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 16 << 20},
      {GRPC_ARG_HTTP2_BDP_PROBE, bdp_probe ? 1 : 0},
  };
}

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_TRANSPORT_GRPC_GRPC_UTIL_H_
