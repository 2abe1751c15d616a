// The exit-code contract every Ringwork binary follows (documented in README.md).
// A failure is carried as an absl::Status; its canonical code decides the exit code,
// so library code only has to pick the right status code:
//
//   absl::Status st = model.Fit(train, fit).status();
//   int code = ExitCodeFor(st);   // or, to end the program with it: ExitWithStatus(st);
//
//   status code                              exit code
//   OK                                       0  kOk
//   INVALID_ARGUMENT, NOT_FOUND,             2  kUsageOrConfig
//     OUT_OF_RANGE, ALREADY_EXISTS
//   UNAVAILABLE, ABORTED, CANCELLED          3  kPeerFailure
//   DEADLINE_EXCEEDED                        4  kTimeout
//   DATA_LOSS                                5  kInvalidCheckpoint
//   InvalidDataError() (DATA_LOSS + marker)  8  kInvalidData
//   UNAUTHENTICATED, PERMISSION_DENIED       6  kAuthRejected
//   FAILED_PRECONDITION                      7  kMismatch
//   PreemptedError() (CANCELLED + payload)   143 kPreempted
//   anything else (INTERNAL, UNKNOWN, ...)   1  kInternal (a bug: please report)
#ifndef RINGWORK_BASE_EXIT_CODE_H_
#define RINGWORK_BASE_EXIT_CODE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace ringwork {

enum ExitCode : int {
  kOk = 0,
  kInternal = 1,
  kUsageOrConfig = 2,
  kPeerFailure = 3,
  kTimeout = 4,
  kInvalidCheckpoint = 5,
  kAuthRejected = 6,
  kMismatch = 7,
  // Input data that cannot be read or parsed: a corrupt record, a feature of the
  // wrong type or shape, a malformed CSV row, an undecodable image.
  kInvalidData = 8,
  // SIGTERM (preemption) arrived: every worker stopped at a step boundary after
  // saving a backup. 128 + SIGTERM, as schedulers expect of a terminated process
  // (Kubeflow's ExitCode restart policy retries 128-255); rerun to resume.
  kPreempted = 143,
};

ExitCode ExitCodeFor(const absl::Status& status);

// A short name for an exit code ("config error", "peer failure", ...).
absl::string_view ExitCodeName(int code);

// Logs "error: <message> (exit <code>: <name>)" and exits the process with the
// status's exit code. Use only in main()-level code.
[[noreturn]] void ExitWithStatus(const absl::Status& status);

// Helpers that make the intended exit code explicit at the call site.
inline absl::Status ConfigError(absl::string_view message) {
  return absl::InvalidArgumentError(message);
}
inline absl::Status PeerError(absl::string_view message) { return absl::UnavailableError(message); }
inline absl::Status TimeoutError(absl::string_view message) {
  return absl::DeadlineExceededError(message);
}
inline absl::Status CheckpointError(absl::string_view message) {
  return absl::DataLossError(message);
}
inline absl::Status AuthError(absl::string_view message) {
  return absl::UnauthenticatedError(message);
}
inline absl::Status MismatchError(absl::string_view message) {
  return absl::FailedPreconditionError(message);
}
// DATA_LOSS whose message starts "invalid input data: " (added when missing): the
// text marks it, so peers that learn the cause as a code and a message exit 8 too.
inline constexpr char kInvalidDataMarker[] = "invalid input data: ";
absl::Status InvalidDataError(absl::string_view message);
// Carries kPreempted in a payload (no canonical code means "preempted"). Keep
// the status itself when adding context, or the payload is lost.
absl::Status PreemptedError(absl::string_view message);

}  // namespace ringwork

#endif  // RINGWORK_BASE_EXIT_CODE_H_
