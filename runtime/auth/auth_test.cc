// The cluster token, the RPC HMAC and the TLS flag checks, without a network.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "runtime/auth/cluster_token.h"
#include "runtime/auth/refusal_log.h"
#include "runtime/auth/rpc_auth.h"
#include "runtime/auth/tls_credentials.h"

namespace ringwork {
namespace {

using Metadata = std::multimap<grpc::string_ref, grpc::string_ref>;

// Metadata as a server would see it from a client that attached `pairs`.
struct Call {
  explicit Call(CallMetadata pairs) : storage(std::move(pairs)) {
    for (const auto& [k, v] : storage) metadata.emplace(k, v);
  }
  CallMetadata storage;
  Metadata metadata;
};

const std::string kToken = "0123456789abcdef0123456789abcdef";

TEST_CASE("the HMAC is deterministic and covers every field", "[auth]") {
  auto mac = [](const std::string& token, RpcMethod method, const std::string& fp, int64_t rank,
                uint64_t incarnation, int64_t to_rank, uint64_t to_incarnation) {
    return RpcAuth::Mac(token, method, fp, rank, incarnation, to_rank, to_incarnation);
  };
  const std::string base = mac(kToken, RpcMethod::kHeartbeat, "fp", 1, 42, 0, 7);
  CHECK(base.size() == 64);
  CHECK(base == mac(kToken, RpcMethod::kHeartbeat, "fp", 1, 42, 0, 7));
  CHECK(base != mac(kToken + "x", RpcMethod::kHeartbeat, "fp", 1, 42, 0, 7));
  CHECK(base != mac(kToken, RpcMethod::kTransfer, "fp", 1, 42, 0, 7));
  CHECK(base != mac(kToken, RpcMethod::kJoin, "fp", 1, 42, 0, 7));
  CHECK(base != mac(kToken, RpcMethod::kHeartbeat, "fq", 1, 42, 0, 7));
  CHECK(base != mac(kToken, RpcMethod::kHeartbeat, "fp", 2, 42, 0, 7));
  CHECK(base != mac(kToken, RpcMethod::kHeartbeat, "fp", 1, 43, 0, 7));
  CHECK(base != mac(kToken, RpcMethod::kHeartbeat, "fp", 1, 42, 2, 7));
  CHECK(base != mac(kToken, RpcMethod::kHeartbeat, "fp", 1, 42, 0, 8));
}

TEST_CASE("a server with a token accepts only calls signed with it", "[auth]") {
  RpcAuth server(kToken, "cluster-a", 0, 7);
  const RpcAuth peer(kToken, "cluster-a", 1, 99);
  {
    Call call(peer.CallMetadataFor(RpcMethod::kHeartbeat, 0, 7));
    absl::StatusOr<RpcIdentity> who = server.Verify(call.metadata, RpcMethod::kHeartbeat);
    REQUIRE(who.ok());
    CHECK(who->rank == 1);
    CHECK(who->incarnation == 99);
    CHECK(server.SameCluster(*who).ok());
  }
  {
    Call call(RpcAuth("", "cluster-a", 1, 99).CallMetadataFor(RpcMethod::kHeartbeat, 0, 7));
    absl::Status st = server.Verify(call.metadata, RpcMethod::kHeartbeat).status();
    CHECK(absl::IsUnauthenticated(st));
    CHECK(std::string(st.message()).find("carries no cluster token") != std::string::npos);
  }
  {
    Call call(RpcAuth("another-token-of-another-job", "cluster-a", 1, 99)
                  .CallMetadataFor(RpcMethod::kHeartbeat, 0, 7));
    absl::Status st = server.Verify(call.metadata, RpcMethod::kHeartbeat).status();
    CHECK(absl::IsUnauthenticated(st));
    CHECK(std::string(st.message()).find("token is wrong") != std::string::npos);
  }
  {  // A forged identity under a real MAC: the MAC no longer matches.
    CallMetadata pairs = peer.CallMetadataFor(RpcMethod::kHeartbeat, 0, 7);
    for (auto& [k, v] : pairs) {
      if (k == "rw-rank") v = "2";
    }
    Call call(pairs);
    CHECK(absl::IsUnauthenticated(server.Verify(call.metadata, RpcMethod::kHeartbeat).status()));
  }
  {
    Call call(RpcAuth(kToken, "cluster-b", 1, 99).CallMetadataFor(RpcMethod::kHeartbeat, 0, 7));
    absl::StatusOr<RpcIdentity> who = server.Verify(call.metadata, RpcMethod::kHeartbeat);
    REQUIRE(who.ok());
    CHECK(absl::IsPermissionDenied(server.SameCluster(*who)));
  }
  {  // Nothing, or a repeated key.
    CHECK(absl::IsUnauthenticated(server.Verify(Metadata(), RpcMethod::kHeartbeat).status()));
    CallMetadata pairs = peer.CallMetadataFor(RpcMethod::kHeartbeat, 0, 7);
    pairs.push_back({"rw-rank", "1"});
    Call call(pairs);
    CHECK(absl::IsUnauthenticated(server.Verify(call.metadata, RpcMethod::kHeartbeat).status()));
  }
}

TEST_CASE("a call binds to its method and to the callee's process", "[auth]") {
  const RpcAuth peer(kToken, "cluster-a", 1, 99);
  const RpcAuth server(kToken, "cluster-a", 0, 7);
  SECTION("a Heartbeat's metadata does not open a Transfer") {
    Call call(peer.CallMetadataFor(RpcMethod::kHeartbeat, 0, 7));
    CHECK(server.Verify(call.metadata, RpcMethod::kHeartbeat).ok());
    absl::Status st = server.Verify(call.metadata, RpcMethod::kTransfer).status();
    CHECK(absl::IsUnauthenticated(st));
    CHECK(absl::IsUnauthenticated(server.Verify(call.metadata, RpcMethod::kJoin).status()));
  }
  SECTION("a call captured in an earlier run is refused by this run's worker") {
    // The same job (token, cluster, ranks) ran before; rank 0 was incarnation 6.
    Call captured(peer.CallMetadataFor(RpcMethod::kTransfer, 0, 6));
    absl::Status st = server.Verify(captured.metadata, RpcMethod::kTransfer).status();
    CHECK(absl::IsUnauthenticated(st));
    CHECK(std::string(st.message()).find("a call of an earlier run") != std::string::npos);
    CHECK(server.challenge() == "7");
  }
  SECTION("a call for another rank is refused") {
    Call call(peer.CallMetadataFor(RpcMethod::kHeartbeat, 2, 7));
    CHECK(absl::IsUnauthenticated(server.Verify(call.metadata, RpcMethod::kHeartbeat).status()));
  }
  SECTION("a first Join, before the callee's incarnation is known, is challenged") {
    Call first(peer.CallMetadataFor(RpcMethod::kJoin, 0, 0));
    CHECK(absl::IsUnauthenticated(server.Verify(first.metadata, RpcMethod::kJoin).status()));
    Call second(peer.CallMetadataFor(RpcMethod::kJoin, 0, std::stoull(server.challenge())));
    CHECK(server.Verify(second.metadata, RpcMethod::kJoin).ok());
  }
  SECTION(
      "after an elastic regroup, Joins (only) addressed to the original rank are this worker's") {
    RpcAuth regrouped(kToken, "cluster-b", 0, 7);  // Was rank 2 of TF_CONFIG's ring.
    regrouped.AlsoAnswerJoinsAs(2);
    Call join(peer.CallMetadataFor(RpcMethod::kJoin, 2, 0));
    bool stale = false;
    CHECK(absl::IsUnauthenticated(
        regrouped.Verify(join.metadata, RpcMethod::kJoin, &stale).status()));
    CHECK(stale);  // Challenged like a first Join to rank 0.
    Call signed_join(peer.CallMetadataFor(RpcMethod::kJoin, 2, 7));
    CHECK(regrouped.Verify(signed_join.metadata, RpcMethod::kJoin).ok());
    Call heartbeat(peer.CallMetadataFor(RpcMethod::kHeartbeat, 2, 7));
    CHECK(absl::IsUnauthenticated(
        regrouped.Verify(heartbeat.metadata, RpcMethod::kHeartbeat).status()));
    Call other(peer.CallMetadataFor(RpcMethod::kJoin, 1, 7));
    CHECK(absl::IsUnauthenticated(regrouped.Verify(other.metadata, RpcMethod::kJoin).status()));
  }
}

TEST_CASE("another build's protocol is named; a signed body must be the one sent", "[auth]") {
  const RpcAuth server(kToken, "cluster-a", 0, 7);
  const RpcAuth peer(kToken, "cluster-a", 1, 99);
  CallMetadata pairs = peer.CallMetadataFor(RpcMethod::kJoin, 0, 7, "segment /a");
  {
    Call call(pairs);
    REQUIRE(server.Verify(call.metadata, RpcMethod::kJoin).ok());
    CHECK(server.VerifyBody(call.metadata, "segment /a").ok());
    CHECK(absl::IsUnauthenticated(server.VerifyBody(call.metadata, "segment /b")));
  }
  for (auto& [k, v] : pairs) {
    if (k == "rw-protocol") v = "1";
  }
  Call old_build(pairs);
  const absl::Status st = server.Verify(old_build.metadata, RpcMethod::kJoin).status();
  CHECK(absl::IsInvalidArgument(st));
  CHECK(std::string(st.message()).find("protocol \"1\", this worker 3") != std::string::npos);
}

TEST_CASE("only a genuine call for another incarnation is told this one", "[auth]") {
  const RpcAuth server(kToken, "cluster-a", 0, 7);
  bool stale = false;
  Call signed_call(RpcAuth(kToken, "cluster-a", 1, 99).CallMetadataFor(RpcMethod::kJoin, 0, 0));
  CHECK_FALSE(server.Verify(signed_call.metadata, RpcMethod::kJoin, &stale).ok());
  CHECK(stale);
  Call unsigned_call(RpcAuth("", "cluster-a", 1, 99).CallMetadataFor(RpcMethod::kJoin, 0, 0));
  CHECK_FALSE(server.Verify(unsigned_call.metadata, RpcMethod::kJoin, &stale).ok());
  CHECK_FALSE(stale);
}

TEST_CASE("without a token a bound Ringwork call is accepted", "[auth]") {
  RpcAuth server("", "cluster-a", 0, 7);
  const RpcAuth peer("", "cluster-a", 1, 99);
  Call call(peer.CallMetadataFor(RpcMethod::kHeartbeat, 0, 7));
  CHECK(server.Verify(call.metadata, RpcMethod::kHeartbeat).ok());
  CHECK(call.storage.size() == 6);  // No rw-auth.
  Call stale(peer.CallMetadataFor(RpcMethod::kHeartbeat, 0, 6));
  CHECK(absl::IsUnauthenticated(server.Verify(stale.metadata, RpcMethod::kHeartbeat).status()));
}

TEST_CASE("refusals are logged once per host and kind, and bounded", "[auth]") {
  RefusalLog::Options bounded;
  bounded.max_entries = 3;
  RefusalLog log(bounded);
  const absl::Status bad = absl::UnauthenticatedError("x");
  CHECK(log.Refused("ipv4:10.0.0.5:1000", "Join", bad));
  CHECK_FALSE(log.Refused("ipv4:10.0.0.5:1001", "Join", bad));  // Same host, another port.
  CHECK(log.size() == 1);
  log.Refused("ipv4:10.0.0.5:1002", "Heartbeat", bad);
  log.Refused("ipv4:10.0.0.6:1000", "Join", bad);
  CHECK_FALSE(log.Refused("ipv4:10.0.0.7:1000", "Join", bad));  // Over the bound: not kept.
  CHECK(log.size() == 3);
  RefusalLog reasons;
  reasons.Refused("ipv4:10.0.0.5:1000", "Join", bad);
  reasons.Refused("ipv4:10.0.0.5:1000", "Join",
                  absl::UnauthenticatedError("y"));  // Another reason.
  CHECK(reasons.size() == 2);
}

TEST_CASE("refusals are rate-limited, and caller-chosen text is cut and escaped", "[auth]") {
  RefusalLog::Options options;
  options.burst = 2;
  options.period_s = 3600;
  RefusalLog log(options);
  int logged = 0;
  for (int i = 0; i < 50; ++i) {
    logged += log.Refused(absl::StrCat("ipv4:10.0.0.", i, ":1"), "a Join",
                          absl::InvalidArgumentError("x"))
                  ? 1
                  : 0;
  }
  CHECK(logged == 2);
  // One host cannot use the log up with reasons of its own choosing.
  RefusalLog per_host;
  int from_one = 0;
  for (int i = 0; i < 50; ++i) {
    from_one += per_host.Refused("ipv4:10.0.0.9:1", "a Join",
                                 absl::InvalidArgumentError(absl::StrCat("reason ", i)))
                    ? 1
                    : 0;
  }
  CHECK(from_one == 8);
  CHECK(per_host.Refused("ipv4:10.0.0.10:1", "a Join", absl::InvalidArgumentError("x")));
  CHECK(RefusalLog::Printable(std::string(1000, 'a'), 300) == std::string(300, 'a') + "...");
  CHECK(RefusalLog::Printable("a'b\nc\x01\\", 300) == "a'b\\x0ac\\x01\\x5c");
}

std::string TempFile(const std::string& name, const std::string& text, mode_t mode = 0600) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/" + name;
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
  return path;
}

TEST_CASE("the token comes from a file or the environment, and must be long enough", "[auth]") {
  CHECK(*LoadClusterToken("", nullptr) == "");
  CHECK(*LoadClusterToken("", kToken.c_str()) == kToken);
  CHECK(*LoadClusterToken(TempFile("token", kToken + "\n"), "ignored-when-a-file-is-given") ==
        kToken);
  absl::Status short_token = LoadClusterToken("", "abc").status();
  CHECK(absl::IsInvalidArgument(short_token));
  CHECK(short_token.message().find("RINGWORK_CLUSTER_TOKEN: the cluster token has 3 characters") !=
        absl::string_view::npos);
  CHECK(short_token.message().find("abc") == absl::string_view::npos);  // Never printed.
  absl::Status missing = LoadClusterToken("/nonexistent/token", nullptr).status();
  CHECK(missing.message().find("--cluster_token_file=/nonexistent/token: cannot read it") !=
        absl::string_view::npos);
  absl::StatusOr<std::string> a = NewClusterToken(), b = NewClusterToken();
  REQUIRE(a.ok());
  CHECK(a->size() == 64);
  CHECK(*a != *b);
}

TEST_CASE("TLS needs all three files, each PEM", "[auth]") {
  CHECK(!LoadTlsCredentials({}).value().enabled);
  absl::Status partial = LoadTlsCredentials({.ca = "/x/ca.pem"}).status();
  CHECK(partial.message().find("--tls_cert is missing") != absl::string_view::npos);
  const std::string not_pem = TempFile("not.pem", "hello");
  absl::Status bad = LoadTlsCredentials({not_pem, not_pem, not_pem}).status();
  CHECK(bad.message().find("--tls_ca=" + not_pem + ": not a PEM file") != absl::string_view::npos);
}

}  // namespace
}  // namespace ringwork
