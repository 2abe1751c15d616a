// Who may call a worker. Every RPC a worker makes (Join, Heartbeat, Transfer)
// carries its identity in gRPC metadata: the cluster fingerprint it believes in,
// its rank and its incarnation (one per process), and, when the cluster has a
// token, an HMAC-SHA256 of those keyed with the token. The server recomputes the
// HMAC with its own token before it looks at anything else:
//
//   no or wrong HMAC (no token, another token: another job or run)  UNAUTHENTICATED
//   right HMAC, another cluster fingerprint                          PERMISSION_DENIED
//     (Join excepted: there the caller is told how the clusters differ, exit 2)
//
// A refused call changes nothing in the worker: training goes on. Without a token
// every call is accepted (as TensorFlow and PyTorch do); the token is a shared
// secret, so metadata can be replayed by whoever can read the traffic: use mutual
// TLS (runtime/auth/tls_credentials.h) on networks you do not trust.
//
//   RpcAuth auth(token, fingerprint, rank, incarnation);
//   for (auto& [k, v] : auth.call_metadata()) context.AddMetadata(k, v);   // client
//   absl::StatusOr<RpcIdentity> who = auth.Verify(server_context->client_metadata());
#ifndef RINGWORK_RUNTIME_AUTH_RPC_AUTH_H_
#define RINGWORK_RUNTIME_AUTH_RPC_AUTH_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"

namespace ringwork {

using CallMetadata = std::vector<std::pair<std::string, std::string>>;

struct RpcIdentity {
  std::string fingerprint;
  int64_t rank = -1;
  uint64_t incarnation = 0;
};

class RpcAuth {
 public:
  RpcAuth(std::string token, std::string fingerprint, int rank, uint64_t incarnation);

  bool enabled() const { return !token_.empty(); }
  // What this worker attaches to each of its calls.
  const ::ringwork::CallMetadata& call_metadata() const { return metadata_; }
  // The caller's identity, authenticated when there is a token (UNAUTHENTICATED
  // otherwise). The fingerprint is the caller's; compare it (SameCluster).
  absl::StatusOr<RpcIdentity> Verify(
      const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) const;
  // PERMISSION_DENIED unless `who` is of this worker's cluster.
  absl::Status SameCluster(const RpcIdentity& who) const;

  // HMAC-SHA256 of the identity under `token`, hex (exposed for tests).
  static std::string Mac(const std::string& token, const std::string& fingerprint, int64_t rank,
                         uint64_t incarnation);

 private:
  std::string token_;
  std::string fingerprint_;
  ::ringwork::CallMetadata metadata_;
};

// Logs each refusal (what was refused, and why) once per remote host, at most
// `max_entries` lines in all, so that a flood of bad calls does not flood the log.
class RefusalLog {
 public:
  explicit RefusalLog(size_t max_entries = 256) : max_entries_(max_entries) {}
  // `peer` as gRPC gives it ("ipv4:10.0.0.5:51234"); the port is ignored.
  void Refused(const std::string& peer, const std::string& what, const absl::Status& why);
  size_t size() const;

 private:
  size_t max_entries_;
  mutable std::mutex mu_;
  std::set<std::string> seen_;  // Guarded by mu_.
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_AUTH_RPC_AUTH_H_
