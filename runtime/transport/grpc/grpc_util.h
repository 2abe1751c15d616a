// Small conversions between gRPC's types and ours.
#ifndef RINGWORK_RUNTIME_TRANSPORT_GRPC_GRPC_UTIL_H_
#define RINGWORK_RUNTIME_TRANSPORT_GRPC_GRPC_UTIL_H_

#include <grpcpp/grpcpp.h>

#include <chrono>

#include "absl/status/status.h"
#include "base/deadline.h"

namespace ringwork {

// gRPC deadlines are system-clock times; ours are steady-clock ones.
inline std::chrono::system_clock::time_point ToSystemTime(const Deadline& deadline) {
  if (deadline.IsNever()) {
    return std::chrono::system_clock::now() + std::chrono::hours(24 * 365);
  }
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(
             deadline.when() - Deadline::Clock::now());
}

// The same code and message (gRPC's codes are absl's).
inline absl::Status FromGrpcStatus(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

inline grpc::Status ToGrpcStatus(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_TRANSPORT_GRPC_GRPC_UTIL_H_
