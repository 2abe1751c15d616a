// Startup: every ring member calls Join on every other one, retrying with backoff
// until all have answered and all have called it, or the startup deadline passes.
// Workers may start in any order. While waiting it logs, every few seconds, which
// tasks are missing and why; at the deadline it fails with UNAVAILABLE (exit 3)
// naming them. A peer that describes another cluster is refused at once, and both
// sides fail with INVALID_ARGUMENT (exit 2) showing both descriptions.
//
//   InboundJoins inbound(world_size);          // filled by the server's Join handler
//   absl::StatusOr<std::vector<JoinedPeer>> peers = RunRendezvous(
//       config, stubs, make_request, inbound, options);
#ifndef RINGWORK_RUNTIME_TRANSPORT_GRPC_RENDEZVOUS_H_
#define RINGWORK_RUNTIME_TRANSPORT_GRPC_RENDEZVOUS_H_

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/worker.grpc.pb.h"
#include "runtime/config/cluster_config.h"

namespace ringwork {

// 2: calls bound to both processes; 3: all-reduces between gRPC-only ranks pick
// recursive doubling up to 1 MiB (an older worker would run another algorithm);
// 4: a pair's frames travel both ways on the call the lower rank opens.
inline constexpr uint32_t kProtocolVersion = 4;

struct RendezvousOptions {
  // Flag --startup_timeout_s, env RINGWORK_STARTUP_TIMEOUT_S.
  double startup_timeout_s = 300;
  double log_interval_s = 5;     // How often to report missing tasks.
  double attempt_timeout_s = 2;  // Deadline of one Join call.
  double initial_backoff_s = 0.05;
  double max_backoff_s = 1;
  std::string timeout_flag = "--startup_timeout_s (env RINGWORK_STARTUP_TIMEOUT_S)";
  // Elastic regroup (runtime/regroup.h): a peer that refuses the call (it may still
  // be in the round before, of another generation or membership) is asked again
  // until the deadline, and a refused inbound Join does not end the rendezvous.
  bool regroup = false;
  // A discovery round: at the deadline the rendezvous ends without an error, and
  // JoinedPeer::present says who answered or called.
  bool discovery = false;
  // With `discovery`: the round's window (startup_timeout_s) opens at the first
  // member of an earlier generation (member_since) that answers or calls (not at
  // another worker joining), waiting up to this long for one (a worker joining
  // a running job waits there for the members to reach a step boundary). 0: the
  // window opens at once.
  double first_contact_wait_s = 0;
  // With `discovery`: when the window ends while a peer that is a member of an
  // earlier generation's ring (kMemberOfGenerationKey in its refusal: alive, and
  // still busy in that ring, e.g. writing a checkpoint) has not come, the round
  // waits for it up to this long from its start, and ends once none is behind.
  // A peer that died (no server) or went on to this generation is not awaited.
  double late_member_wait_s = 0;
  // Elastic training: a running member refuses a Join of the job's first
  // generation from a worker that is not one of its ring (one that starts again)
  // with the generation it runs (kRunningGenerationKey) and counts it as a worker
  // waiting to join; the starting worker's rendezvous then ends at once with
  // JobRunningError.
  bool elastic = false;
  // JoinRequest.member_since and asks_to_join of this worker's Joins.
  int member_since = 0;
  bool asks_to_join = false;
};

// The trailing metadata of such a refusal: the refusing worker's generation.
inline constexpr char kRunningGenerationKey[] = "rw-running-generation";
// The trailing metadata of a Join's answer from a worker of an elastic ring that
// formed (or of a membership round): its generation.
inline constexpr char kMemberOfGenerationKey[] = "rw-member-of-generation";

// UNAVAILABLE (exit 3), "the job runs already", carrying `generation`.
absl::Status JobRunningError(int generation, absl::string_view message);
// The generation a JobRunningError carries; -1 for any other status.
int RunningGenerationOf(const absl::Status& status);

// What this worker learned from a peer's answer.
struct JoinedPeer {
  uint64_t incarnation = 0;
  bool mapped_our_shm = false;
  bool present = false;  // It answered a Join of this worker's, or called one.
  int member_since = 0;  // JoinResponse.member_since.
};

// The peers that joined this worker (written by the Join handler on gRPC's server
// threads, read by the rendezvous loop).
class InboundJoins {
 public:
  explicit InboundJoins(int world_size)
      : incarnation_(world_size, 0),
        joined_(world_size),
        failed_(world_size),
        member_since_(world_size, 0) {}
  // Admits a Join from `rank` (process `incarnation`), runs `accept` (which maps
  // its shared memory) and records it, as one step that Seal() cannot interleave
  // with. Admitted: always during startup; after Seal() only the process that
  // joined (a retry changes nothing) or a rank declared failed (MarkFailed).
  // ALREADY_EXISTS otherwise.
  // `member_since`: the Join's JoinRequest.member_since, recorded with it.
  absl::Status AdmitAndRecord(int rank, uint64_t incarnation, int member_since,
                              const std::function<void()>& accept);
  // The rendezvous is over: the membership is fixed.
  void Seal();
  bool sealed() const;
  // A peer declared failed (heartbeats, its link): a later process of that rank may
  // join again (what elastic training will build on).
  void MarkFailed(int rank);
  // A Join this worker refused because the caller describes another cluster: the
  // rendezvous then fails with the same error.
  void RecordRejection(const absl::Status& status);
  bool joined(int rank) const;
  // JoinRequest.member_since of `rank`'s Join.
  int member_since(int rank) const;
  // Elastic: a worker of a later generation of this cluster called (a membership
  // round): the job runs at `generation` at least. The rendezvous of a worker
  // starting then ends with JobRunningError.
  void RecordRunningGeneration(int generation);
  int running_generation() const;  // -1: none seen.
  uint64_t incarnation(int rank) const;
  // Ranks recorded so far: the world size, or more once a membership round
  // admitted a worker added to the job (ranks past it read as never joined).
  int size() const;
  absl::Status rejection() const;

 private:
  std::mutex admission_mu_;  // Held by AdmitAndRecord and Seal; taken before mu_.
  mutable std::mutex mu_;
  std::vector<uint64_t> incarnation_;  // Guarded by mu_.
  std::vector<bool> joined_;           // Guarded by mu_.
  std::vector<bool> failed_;           // Guarded by mu_.
  std::vector<int> member_since_;      // Guarded by mu_.
  int running_generation_ = -1;        // Guarded by mu_.
  bool sealed_ = false;                // Guarded by mu_.
  absl::Status rejection_;             // Guarded by mu_.
};

// The fields of a Join that the caller signs with the token beyond its identity
// (RpcAuth::CallMetadataFor's `body`): a request replayed with another segment or
// task is refused.
std::string SignedJoinFields(const proto::JoinRequest& request);

// Checks a Join request against this worker's view; the error (INVALID_ARGUMENT)
// shows both sides. `self_address` is this worker's address as its TF_CONFIG says.
// `known_ranks`: callers' ranks below it are peers too (a membership round that
// learned of workers added to the job).
absl::Status ValidateJoin(const ClusterConfig& config, const proto::JoinRequest& request,
                          const std::string& caller_address, int known_ranks = 0);

// `stubs[rank]` for every peer (null for this rank); `make_request(rank)` builds the
// Join request for that peer; each call carries `metadata(rank, incarnation)`
// (identity and token HMAC, bound to the peer's incarnation: 0 until a refusal's
// rw-challenge tells it, then the call is retried at once with it).
absl::StatusOr<std::vector<JoinedPeer>> RunRendezvous(
    const ClusterConfig& config, const std::vector<proto::Worker::Stub*>& stubs,
    const std::function<proto::JoinRequest(int rank)>& make_request,
    const std::function<
        std::vector<std::pair<std::string, std::string>>(int rank, uint64_t incarnation)>& metadata,
    const InboundJoins& inbound, const RendezvousOptions& options);

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_TRANSPORT_GRPC_RENDEZVOUS_H_
