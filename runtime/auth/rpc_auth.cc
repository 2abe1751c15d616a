#include "runtime/auth/rpc_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace ringwork {
namespace {

constexpr char kFingerprintKey[] = "rw-fingerprint";
constexpr char kRankKey[] = "rw-rank";
constexpr char kIncarnationKey[] = "rw-incarnation";
constexpr char kToRankKey[] = "rw-to-rank";
constexpr char kToIncarnationKey[] = "rw-to-incarnation";
constexpr char kMacKey[] = "rw-auth";
constexpr char kBodyMacKey[] = "rw-body-auth";
constexpr char kProtocolKey[] = "rw-protocol";
constexpr size_t kMaxValueBytes = 256;

// At most 16 printable characters of a caller's value, for messages.
std::string RefusalText(const std::string& value) {
  std::string text;
  for (char c : value.substr(0, 16)) text += (c >= 0x20 && c < 0x7f) ? c : '?';
  return absl::StrCat("\"", text, "\"");
}

// One metadata value; empty when absent, repeated or too long.
std::string Value(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                  const char* key) {
  auto range = metadata.equal_range(key);
  if (range.first == range.second || std::next(range.first) != range.second) return "";
  const grpc::string_ref& v = range.first->second;
  if (v.size() > kMaxValueBytes) return "";
  return std::string(v.data(), v.size());
}

std::string Hmac(const std::string& key, const std::string& message) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &length);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(mac), length));
}

bool SameSecret(const std::string& got, const std::string& want) {
  return got.size() == want.size() && CRYPTO_memcmp(got.data(), want.data(), want.size()) == 0;
}

}  // namespace

const char* RpcMethodName(RpcMethod method) {
  switch (method) {
    case RpcMethod::kJoin:
      return "Join";
    case RpcMethod::kHeartbeat:
      return "Heartbeat";
    case RpcMethod::kTransfer:
      return "Transfer";
    case RpcMethod::kTransferReply:
      return "TransferReply";
  }
  return "?";
}

RpcAuth::RpcAuth(std::string token, std::string fingerprint, int rank, uint64_t incarnation)
    : token_(std::move(token)),
      fingerprint_(std::move(fingerprint)),
      rank_(rank),
      incarnation_(incarnation) {}

CallMetadata RpcAuth::CallMetadataFor(RpcMethod method, int64_t to_rank, uint64_t to_incarnation,
                                      const std::string& body) const {
  CallMetadata metadata = {{kProtocolKey, std::to_string(kRpcAuthVersion)},
                           {kFingerprintKey, fingerprint_},
                           {kRankKey, std::to_string(rank_)},
                           {kIncarnationKey, std::to_string(incarnation_)},
                           {kToRankKey, std::to_string(to_rank)},
                           {kToIncarnationKey, std::to_string(to_incarnation)}};
  if (enabled()) {
    const std::string mac =
        Mac(token_, method, fingerprint_, rank_, incarnation_, to_rank, to_incarnation);
    metadata.push_back({kMacKey, mac});
    if (!body.empty()) {
      metadata.push_back(
          {kBodyMacKey, Hmac(token_, absl::StrCat("ringwork-body-v2\n", mac, "\n", body))});
    }
  }
  return metadata;
}

std::string RpcAuth::Mac(const std::string& token, RpcMethod method, const std::string& fingerprint,
                         int64_t rank, uint64_t incarnation, int64_t to_rank,
                         uint64_t to_incarnation) {
  return Hmac(
      token, absl::StrCat("ringwork-rpc-v2\n", RpcMethodName(method), "\n", fingerprint, "\n", rank,
                          "\n", incarnation, "\n", to_rank, "\n", to_incarnation));
}

absl::Status RpcAuth::VerifyBody(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                                 const std::string& body) const {
  if (!enabled()) return absl::OkStatus();
  const std::string want =
      Hmac(token_, absl::StrCat("ringwork-body-v2\n", Value(metadata, kMacKey), "\n", body));
  if (!SameSecret(Value(metadata, kBodyMacKey), want)) {
    return absl::UnauthenticatedError("the request is not the one its caller signed");
  }
  return absl::OkStatus();
}

absl::StatusOr<RpcIdentity> RpcAuth::Verify(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata, RpcMethod method,
    bool* stale_callee) const {
  if (stale_callee != nullptr) *stale_callee = false;
  const std::string protocol = Value(metadata, kProtocolKey);
  if (protocol.empty()) {
    return absl::UnauthenticatedError(
        "the call does not identify a Ringwork worker (or one of an older build)");
  }
  if (protocol != std::to_string(kRpcAuthVersion)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the caller speaks Ringwork RPC protocol ", RefusalText(protocol), ", this worker ",
        kRpcAuthVersion, "; run the same Ringwork build on every worker"));
  }
  RpcIdentity who;
  int64_t to_rank = -1;
  uint64_t to_incarnation = 0;
  who.fingerprint = Value(metadata, kFingerprintKey);
  const bool parsed = !who.fingerprint.empty() &&
                      absl::SimpleAtoi(Value(metadata, kRankKey), &who.rank) &&
                      absl::SimpleAtoi(Value(metadata, kIncarnationKey), &who.incarnation) &&
                      absl::SimpleAtoi(Value(metadata, kToRankKey), &to_rank) &&
                      absl::SimpleAtoi(Value(metadata, kToIncarnationKey), &to_incarnation);
  if (!parsed) {
    return absl::UnauthenticatedError("the call does not identify a Ringwork worker");
  }
  if (enabled()) {
    const std::string got = Value(metadata, kMacKey);
    if (got.empty()) {
      return absl::UnauthenticatedError(
          "the call carries no cluster token; every task needs the same token "
          "(--cluster_token_file, or env RINGWORK_CLUSTER_TOKEN)");
    }
    const std::string want =
        Mac(token_, method, who.fingerprint, who.rank, who.incarnation, to_rank, to_incarnation);
    if (!SameSecret(got, want)) {
      return absl::UnauthenticatedError(
          "the call's cluster token is wrong (another job?), or its signature is for another "
          "method; every task needs the same token (--cluster_token_file, or env "
          "RINGWORK_CLUSTER_TOKEN)");
    }
  }
  const bool to_this_rank =
      to_rank == rank_ ||
      (method == RpcMethod::kJoin && join_alias_rank_ >= 0 && to_rank == join_alias_rank_);
  if (!to_this_rank || to_incarnation != incarnation_) {
    // Genuine (signed, or no token), but for another process: the caller may learn
    // this one's incarnation (the challenge) and call again.
    if (stale_callee != nullptr) *stale_callee = to_this_rank;
    return absl::UnauthenticatedError(
        absl::StrCat("the call is meant for rank ", to_rank, " incarnation ", to_incarnation,
                     ", not this worker (rank ", rank_, " incarnation ", incarnation_,
                     "): a call of an earlier run, or one made before learning this incarnation"));
  }
  return who;
}

bool RpcAuth::AsksForChallenge(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
  return Value(metadata, kToIncarnationKey) == "0";
}

absl::Status RpcAuth::SameCluster(const RpcIdentity& who) const {
  if (who.fingerprint == fingerprint_) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat("the caller (rank ", who.rank,
                                                  ") belongs to cluster ", who.fingerprint,
                                                  ", not ", fingerprint_));
}

absl::Status RpcAuth::VerifyPeer(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                                 RpcMethod method, int64_t rank, uint64_t incarnation) const {
  absl::StatusOr<RpcIdentity> who = Verify(metadata, method);
  if (!who.ok()) return who.status();
  absl::Status same = SameCluster(*who);
  if (!same.ok()) return same;
  if (who->rank != rank || who->incarnation != incarnation) {
    return absl::PermissionDeniedError(
        absl::StrCat("it answered as rank ", who->rank, " incarnation ", who->incarnation,
                     ", not rank ", rank, " incarnation ", incarnation));
  }
  return absl::OkStatus();
}

}  // namespace ringwork
