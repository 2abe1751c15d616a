#include "base/exit_code.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"

namespace ringwork {
namespace {

constexpr char kExitCodePayload[] = "type.googleapis.com/ringwork.ExitCode";

}  // namespace

absl::Status InvalidDataError(absl::string_view message) {
  if (absl::StrContains(message, kInvalidDataMarker)) return absl::DataLossError(message);
  return absl::DataLossError(absl::StrCat(kInvalidDataMarker, message));
}

absl::Status PreemptedError(absl::string_view message) {
  absl::Status status = absl::CancelledError(message);
  status.SetPayload(kExitCodePayload, absl::Cord("143"));
  return status;
}

ExitCode ExitCodeFor(const absl::Status& status) {
  if (status.GetPayload(kExitCodePayload).has_value()) return kPreempted;
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return kOk;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kAlreadyExists:
      return kUsageOrConfig;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kCancelled:
      return kPeerFailure;
    case absl::StatusCode::kDeadlineExceeded:
      return kTimeout;
    case absl::StatusCode::kDataLoss:
      // The marker travels with the message to peers (an abort's cause carries
      // its code and message only).
      return absl::StrContains(status.message(), kInvalidDataMarker) ? kInvalidData
                                                                     : kInvalidCheckpoint;
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kPermissionDenied:
      return kAuthRejected;
    case absl::StatusCode::kFailedPrecondition:
      return kMismatch;
    default:
      return kInternal;
  }
}

absl::string_view ExitCodeName(int code) {
  switch (code) {
    case kOk:
      return "ok";
    case kUsageOrConfig:
      return "usage or config error";
    case kPeerFailure:
      return "peer failure or unreachable";
    case kTimeout:
      return "timeout";
    case kInvalidCheckpoint:
      return "invalid checkpoint";
    case kAuthRejected:
      return "authentication or identity rejected";
    case kMismatch:
      return "model or collective mismatch between workers";
    case kInvalidData:
      return "invalid input data";
    case kPreempted:
      return "preempted (SIGTERM): backup saved, rerun to resume";
    default:
      return "internal error";
  }
}

void ExitWithStatus(const absl::Status& status) {
  const int code = ExitCodeFor(status);
  if (code != kOk) {
    RW_LOG(ERROR) << "error: " << status.message() << " (exit " << code << ": "
                  << ExitCodeName(code) << ")";
  }
  std::fflush(stdout);
  std::fflush(stderr);
  std::exit(code);
}

}  // namespace ringwork
