// Who may call a worker. Every RPC a worker makes (Join, Heartbeat, Transfer)
// carries in gRPC metadata its identity (the cluster fingerprint it believes in,
// its rank, its incarnation: one per process) and the callee it is meant for (rank
// and incarnation), and, when the cluster has a token, an HMAC-SHA256 of all of
// that and the method, keyed with the token. The server checks before it looks at
// anything else:
//
//   no or wrong HMAC (no token, another token: another job)            UNAUTHENTICATED
//   meant for another incarnation of this task (a call of an earlier
//     run replayed, or a first Join that did not know it yet)          UNAUTHENTICATED
//     + trailing metadata rw-challenge: this worker's incarnation
//   right HMAC, another cluster fingerprint                            PERMISSION_DENIED
//     (Join excepted: there the caller is told how the clusters differ, exit 2)
//
// So a call binds to the run (both ends' processes) and to its method: metadata
// captured in an earlier run of the same job, or from a Heartbeat, opens nothing
// now. A Join learns the callee's incarnation from the challenge and retries at
// once (runtime/transport/grpc/rendezvous.h); later calls know it from the Join.
//
// A refused call changes nothing in the worker: training goes on. Without a token
// the identity is only a claim (as TensorFlow and PyTorch accept every call), and
// the token is a shared secret: use mutual TLS (runtime/auth/tls_credentials.h) on
// networks you do not trust.
//
//   RpcAuth auth(token, fingerprint, rank, incarnation);
//   for (auto& [k, v] : auth.CallMetadataFor(RpcMethod::kHeartbeat, peer, peer_incarnation))
//     context.AddMetadata(k, v);                                           // client
//   absl::StatusOr<RpcIdentity> who =
//       auth.Verify(server_context->client_metadata(), RpcMethod::kHeartbeat);  // server
#ifndef RINGWORK_RUNTIME_AUTH_RPC_AUTH_H_
#define RINGWORK_RUNTIME_AUTH_RPC_AUTH_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace ringwork {

using CallMetadata = std::vector<std::pair<std::string, std::string>>;

// kTransferReply: not a call but the first metadata of the answer on a data call
// (runtime/transport/grpc/grpc_link.h), signed by the server for the caller.
enum class RpcMethod { kJoin, kHeartbeat, kTransfer, kTransferReply };
const char* RpcMethodName(RpcMethod method);

// Trailing metadata of a refusal for another incarnation: the callee's own.
inline constexpr char kChallengeMetadataKey[] = "rw-challenge";
// The version of this authentication scheme, sent with every call: a worker of
// another build is told so instead of "wrong token".
inline constexpr int kRpcAuthVersion = 3;  // 3: Joins sign member_since and asks_to_join.

struct RpcIdentity {
  std::string fingerprint;
  int64_t rank = -1;
  uint64_t incarnation = 0;
};

class RpcAuth {
 public:
  RpcAuth(std::string token, std::string fingerprint, int rank, uint64_t incarnation);

  bool enabled() const { return !token_.empty(); }
  // What this worker attaches to a call of `method` to rank `to_rank` whose process
  // has incarnation `to_incarnation` (0 when not known yet: it is then refused with
  // a challenge). With a token, `body` (the fields of the request that matter, see
  // VerifyBody) is signed too.
  CallMetadata CallMetadataFor(RpcMethod method, int64_t to_rank, uint64_t to_incarnation,
                               const std::string& body = "") const;
  // The caller's identity, when the call is of this build's protocol, of `method`,
  // meant for this worker's rank and incarnation, and (with a token) signed with
  // it; UNAUTHENTICATED otherwise (INVALID_ARGUMENT for another protocol version).
  // `*stale_callee` (optional) is set when the call is genuine but meant for
  // another incarnation of this worker (answer it with challenge()). The
  // fingerprint is the caller's; compare it (SameCluster).
  absl::StatusOr<RpcIdentity> Verify(
      const std::multimap<grpc::string_ref, grpc::string_ref>& metadata, RpcMethod method,
      bool* stale_callee = nullptr) const;
  // After Verify and parsing: UNAUTHENTICATED unless `body` is what the caller
  // signed (always OK without a token).
  absl::Status VerifyBody(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                          const std::string& body) const;
  // True for a call that names no incarnation of the callee (a first Join asking
  // for the challenge).
  static bool AsksForChallenge(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata);
  // PERMISSION_DENIED unless `who` is of this worker's cluster.
  absl::Status SameCluster(const RpcIdentity& who) const;
  // Verify, SameCluster, and that the sender is the process `rank` with
  // `incarnation` (PERMISSION_DENIED naming both otherwise): for a data call's
  // answer (kTransferReply), from the peer this worker called.
  absl::Status VerifyPeer(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                          RpcMethod method, int64_t rank, uint64_t incarnation) const;
  // Joins addressed to `rank` are this worker's too: after an elastic regroup
  // renumbered the ring, a worker starting again calls this one by its rank in
  // the job's first generation (to learn the generation it runs).
  void AlsoAnswerJoinsAs(int rank) { join_alias_rank_ = rank; }
  // This worker's incarnation, as the rw-challenge value.
  std::string challenge() const { return std::to_string(incarnation_); }

  // HMAC-SHA256 of a call under `token`, hex (exposed for tests).
  static std::string Mac(const std::string& token, RpcMethod method, const std::string& fingerprint,
                         int64_t rank, uint64_t incarnation, int64_t to_rank,
                         uint64_t to_incarnation);

 private:
  std::string token_;
  std::string fingerprint_;
  int join_alias_rank_ = -1;
  int rank_;
  uint64_t incarnation_;
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_AUTH_RPC_AUTH_H_
