#include "runtime/auth/rpc_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"

namespace ringwork {
namespace {

constexpr char kFingerprintKey[] = "rw-fingerprint";
constexpr char kRankKey[] = "rw-rank";
constexpr char kIncarnationKey[] = "rw-incarnation";
constexpr char kMacKey[] = "rw-auth";
constexpr size_t kMaxValueBytes = 256;

// One metadata value; empty when absent, repeated or too long.
std::string Value(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                  const char* key) {
  auto range = metadata.equal_range(key);
  if (range.first == range.second || std::next(range.first) != range.second) return "";
  const grpc::string_ref& v = range.first->second;
  if (v.size() > kMaxValueBytes) return "";
  return std::string(v.data(), v.size());
}

}  // namespace

RpcAuth::RpcAuth(std::string token, std::string fingerprint, int rank, uint64_t incarnation)
    : token_(std::move(token)), fingerprint_(std::move(fingerprint)) {
  metadata_ = {{kFingerprintKey, fingerprint_},
               {kRankKey, std::to_string(rank)},
               {kIncarnationKey, std::to_string(incarnation)}};
  if (enabled()) metadata_.push_back({kMacKey, Mac(token_, fingerprint_, rank, incarnation)});
}

std::string RpcAuth::Mac(const std::string& token, const std::string& fingerprint, int64_t rank,
                         uint64_t incarnation) {
  const std::string message =
      absl::StrCat("ringwork-rpc-v1\n", fingerprint, "\n", rank, "\n", incarnation);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &length);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(mac), length));
}

absl::StatusOr<RpcIdentity> RpcAuth::Verify(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) const {
  RpcIdentity who;
  who.fingerprint = Value(metadata, kFingerprintKey);
  const bool parsed = !who.fingerprint.empty() &&
                      absl::SimpleAtoi(Value(metadata, kRankKey), &who.rank) &&
                      absl::SimpleAtoi(Value(metadata, kIncarnationKey), &who.incarnation);
  if (!parsed) {
    return absl::UnauthenticatedError("the call does not identify a Ringwork worker");
  }
  if (!enabled()) return who;
  const std::string got = Value(metadata, kMacKey);
  if (got.empty()) {
    return absl::UnauthenticatedError(
        "the call carries no cluster token; every task needs the same token "
        "(--cluster_token_file, or env RINGWORK_CLUSTER_TOKEN)");
  }
  const std::string want = Mac(token_, who.fingerprint, who.rank, who.incarnation);
  if (got.size() != want.size() || CRYPTO_memcmp(got.data(), want.data(), want.size()) != 0) {
    return absl::UnauthenticatedError(
        "the call's cluster token is wrong (another job or run?); every task needs the same "
        "token (--cluster_token_file, or env RINGWORK_CLUSTER_TOKEN)");
  }
  return who;
}

absl::Status RpcAuth::SameCluster(const RpcIdentity& who) const {
  if (who.fingerprint == fingerprint_) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat("the caller (rank ", who.rank,
                                                  ") belongs to cluster ", who.fingerprint,
                                                  ", not ", fingerprint_));
}

void RefusalLog::Refused(const std::string& peer, const std::string& what, const absl::Status& why) {
  std::string host = peer;
  const size_t colon = host.rfind(':');
  if (colon != std::string::npos && host.find(':') != colon) host.resize(colon);  // "ipv4:h:port"
  const std::string key = absl::StrCat(host, " ", what, " ", why.message());
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (seen_.size() >= max_entries_ || !seen_.insert(key).second) return;
  }
  RW_LOG(WARNING) << "refused " << what << " from " << host << ": " << why.message()
                  << " (logged once per host)";
}

size_t RefusalLog::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seen_.size();
}

}  // namespace ringwork
