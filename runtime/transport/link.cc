#include "runtime/transport/link.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace ringwork {

absl::Status Link::CheckFrame(const FrameHeader& got, const Request& expected) const {
  // The common case first, without building any text: this runs for every frame.
  if (got.sender_rank == static_cast<uint32_t>(expected.peer) && got.key == expected.key &&
      got.info == expected.info && got.payload_bytes == expected.bytes) {
    return absl::OkStatus();
  }
  const std::string who = absl::StrCat(peer_name_, " and this task (", env_.self_name, ")");
  if (got.sender_rank != static_cast<uint32_t>(expected.peer)) {
    return absl::PermissionDeniedError(absl::StrCat("frame on the link from ", peer_name_,
                                                    " claims to come from rank ", got.sender_rank,
                                                    "; refused"));
  }
  if (got.key.seq != expected.key.seq) {
    return absl::FailedPreconditionError(
        absl::StrCat("collectives out of step between ", who, ": this task expects collective ",
                     expected.key.ToString(), " (", expected.info.ToString(), "), the peer sent ",
                     got.key.ToString(), " (", got.info.ToString(),
                     "); every worker must call the same collectives in the same order"));
  }
  if (got.info != expected.info) {
    return absl::FailedPreconditionError(
        absl::StrCat("collective mismatch between ", who, " in collective #", expected.key.seq,
                     ": this task called ", expected.info.ToString(), ", the peer called ",
                     got.info.ToString()));
  }
  if (!(got.key == expected.key) || got.payload_bytes != expected.bytes) {
    return absl::FailedPreconditionError(absl::StrCat(
        "collective ", expected.info.ToString(), " #", expected.key.seq, " runs differently on ",
        who, ": this task expects ", expected.key.ToString(), " with ", expected.bytes,
        " bytes, the peer sent ", got.key.ToString(), " with ", got.payload_bytes,
        " bytes; give every worker the same collective options (segment size, "
        "algorithm)"));
  }
  return absl::OkStatus();
}

absl::Status PeerClosedError(const std::string& peer_name, const std::string& self_name,
                             const FrameKey& key, const absl::Status& cause) {
  const std::string closed = absl::StrCat(peer_name, " closed its connection while this task (",
                                          self_name, ") waits for frame ", key.ToString());
  if (cause.ok()) return absl::UnavailableError(absl::StrCat(closed, " (it failed or exited)"));
  // The root cause first, with its code (a mismatch stays exit 7, a timeout 4).
  return absl::Status(cause.code(),
                      absl::StrCat(cause.message(), " (reported by ", peer_name, ", which ",
                                   absl::StripPrefix(closed, peer_name + " "), ")"));
}

}  // namespace ringwork
