#include "base/exit_code.h"

#include <catch2/catch.hpp>

namespace ringwork {
namespace {

TEST_CASE("each error helper maps to its documented exit code", "[exit_code]") {
  CHECK(ExitCodeFor(absl::OkStatus()) == 0);
  CHECK(ExitCodeFor(ConfigError("x")) == 2);
  CHECK(ExitCodeFor(PeerError("x")) == 3);
  CHECK(ExitCodeFor(TimeoutError("x")) == 4);
  CHECK(ExitCodeFor(CheckpointError("x")) == 5);
  CHECK(ExitCodeFor(AuthError("x")) == 6);
  CHECK(ExitCodeFor(absl::PermissionDeniedError("x")) == 6);
  CHECK(ExitCodeFor(MismatchError("x")) == 7);
  CHECK(ExitCodeFor(absl::InternalError("x")) == 1);
  CHECK(ExitCodeFor(absl::NotFoundError("x")) == 2);
  CHECK(ExitCodeFor(absl::AbortedError("x")) == 3);
  CHECK(ExitCodeFor(PreemptedError("x")) == 143);
  CHECK(ExitCodeFor(absl::CancelledError("x")) == 3);  // Without the payload.
  CHECK(ExitCodeFor(InvalidDataError("a.tfrecord, record 3: bad")) == 8);
  CHECK(InvalidDataError("x").message() == "invalid input data: x");
  CHECK(InvalidDataError("invalid input data: x").message() == "invalid input data: x");
  // As a peer learns it: the code and the message, with context around it.
  CHECK(ExitCodeFor(absl::DataLossError(
            "epoch 1, step 3: invalid input data: x (reported by worker:1 ...)")) == 8);
}

TEST_CASE("exit codes have names", "[exit_code]") {
  CHECK(ExitCodeName(kTimeout) == "timeout");
  CHECK(ExitCodeName(kMismatch) == "model or collective mismatch between workers");
  CHECK(ExitCodeName(kInvalidData) == "invalid input data");
  CHECK(ExitCodeName(42) == "internal error");
}

}  // namespace
}  // namespace ringwork
