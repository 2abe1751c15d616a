// The cluster token, the RPC HMAC and the TLS flag checks, without a network.
#include <sys/stat.h>

#include <cstdio>
#include <fstream>

#include <catch2/catch.hpp>

#include "runtime/auth/cluster_token.h"
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
  const std::string mac = RpcAuth::Mac(kToken, "fp", 1, 42);
  CHECK(mac.size() == 64);
  CHECK(mac == RpcAuth::Mac(kToken, "fp", 1, 42));
  CHECK(mac != RpcAuth::Mac(kToken + "x", "fp", 1, 42));
  CHECK(mac != RpcAuth::Mac(kToken, "fq", 1, 42));
  CHECK(mac != RpcAuth::Mac(kToken, "fp", 2, 42));
  CHECK(mac != RpcAuth::Mac(kToken, "fp", 1, 43));
}

TEST_CASE("a server with a token accepts only calls signed with it", "[auth]") {
  RpcAuth server(kToken, "cluster-a", 0, 7);
  SECTION("a worker of the same cluster") {
    Call call(RpcAuth(kToken, "cluster-a", 1, 99).call_metadata());
    absl::StatusOr<RpcIdentity> who = server.Verify(call.metadata);
    REQUIRE(who.ok());
    CHECK(who->rank == 1);
    CHECK(who->incarnation == 99);
    CHECK(server.SameCluster(*who).ok());
  }
  SECTION("no token") {
    Call call(RpcAuth("", "cluster-a", 1, 99).call_metadata());
    absl::Status st = server.Verify(call.metadata).status();
    CHECK(absl::IsUnauthenticated(st));
    CHECK(st.message().find("carries no cluster token") != absl::string_view::npos);
  }
  SECTION("another token") {
    Call call(RpcAuth("another-token-of-another-job", "cluster-a", 1, 99).call_metadata());
    absl::Status st = server.Verify(call.metadata).status();
    CHECK(absl::IsUnauthenticated(st));
    CHECK(st.message().find("token is wrong") != absl::string_view::npos);
  }
  SECTION("a forged field under a copied HMAC") {
    CallMetadata pairs = RpcAuth(kToken, "cluster-a", 1, 99).call_metadata();
    for (auto& [k, v] : pairs) {
      if (k == "rw-rank") v = "0";
    }
    Call call(pairs);
    CHECK(absl::IsUnauthenticated(server.Verify(call.metadata).status()));
  }
  SECTION("the right token, another cluster") {
    Call call(RpcAuth(kToken, "cluster-b", 1, 99).call_metadata());
    absl::StatusOr<RpcIdentity> who = server.Verify(call.metadata);
    REQUIRE(who.ok());
    CHECK(absl::IsPermissionDenied(server.SameCluster(*who)));
  }
  SECTION("not a Ringwork call, or a repeated key") {
    CHECK(absl::IsUnauthenticated(server.Verify(Metadata()).status()));
    CallMetadata pairs = RpcAuth(kToken, "cluster-a", 1, 99).call_metadata();
    pairs.push_back({"rw-rank", "1"});
    Call call(pairs);
    CHECK(absl::IsUnauthenticated(server.Verify(call.metadata).status()));
  }
}

TEST_CASE("without a token every Ringwork call is accepted", "[auth]") {
  RpcAuth server("", "cluster-a", 0, 7);
  Call call(RpcAuth("", "cluster-a", 1, 99).call_metadata());
  CHECK(server.Verify(call.metadata).ok());
  CHECK(server.call_metadata().size() == 3);  // No rw-auth.
}

TEST_CASE("refusals are logged once per host and kind, and bounded", "[auth]") {
  RefusalLog log(3);
  const absl::Status bad = absl::UnauthenticatedError("x");
  log.Refused("ipv4:10.0.0.5:1000", "Join", bad);
  log.Refused("ipv4:10.0.0.5:1001", "Join", bad);  // Same host, another port.
  CHECK(log.size() == 1);
  log.Refused("ipv4:10.0.0.5:1002", "Heartbeat", bad);
  log.Refused("ipv4:10.0.0.6:1000", "Join", bad);
  log.Refused("ipv4:10.0.0.7:1000", "Join", bad);  // Over the bound: not kept.
  CHECK(log.size() == 3);
  RefusalLog reasons;
  reasons.Refused("ipv4:10.0.0.5:1000", "Join", bad);
  reasons.Refused("ipv4:10.0.0.5:1000", "Join", absl::UnauthenticatedError("y"));  // Another reason.
  CHECK(reasons.size() == 2);
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
  CHECK(*LoadClusterToken(TempFile("token", kToken + "\n"), "ignored-when-a-file-is-given") == kToken);
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
