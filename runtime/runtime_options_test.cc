// One configuration path for binaries and embedded apps: the precedence of a value
// set in code, a flag, the environment and the default.
#include "runtime/runtime_options.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <limits>

namespace ringwork {
namespace {

struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name); }
  const char* name;
};

TEST_CASE("an embedded app's options take the environment where the code left defaults",
          "[options]") {
  ScopedEnv timeout("RINGWORK_COLLECTIVE_TIMEOUT_S", "7");
  ScopedEnv misses("RINGWORK_HEARTBEAT_MISSES", "9");
  ScopedEnv algorithm("RINGWORK_ALLREDUCE_ALGORITHM", "ring");
  ScopedEnv segment("RINGWORK_SEGMENT_BYTES", "65536");
  ScopedEnv transport("RINGWORK_TRANSPORT", "grpc");
  ScopedEnv probe("RINGWORK_GRPC_BDP_PROBE", "1");
  ScopedEnv token("RINGWORK_CLUSTER_TOKEN", "0123456789abcdef0123456789abcdef");
  RuntimeOptions options;
  options.heartbeat.misses = 3;                 // Set by the code: it wins.
  options.collectives.segment_bytes = 1 << 20;  // Likewise.
  REQUIRE(options.ApplyEnvironmentAndFinish().ok());
  CHECK(options.finished());
  CHECK(options.collectives.timeout_s == 7);
  CHECK(options.heartbeat.misses == 3);
  CHECK(options.collectives.allreduce_algorithm == AllReduceAlgorithm::kRing);
  CHECK(options.collectives.segment_bytes == (1 << 20));
  CHECK(options.transport_kind == "grpc");
  CHECK(options.grpc_bdp_probe);
  CHECK(options.cluster_token == "0123456789abcdef0123456789abcdef");
  CHECK(options.heartbeat.interval_s == HeartbeatOptions().interval_s);  // No variable: default.
}

TEST_CASE("timeline settings: a step window counted from 1, bounds checked", "[options]") {
  {
    ScopedEnv path("RINGWORK_TIMELINE", "/tmp/t.json");
    ScopedEnv steps("RINGWORK_TIMELINE_STEPS", "10:20");
    RuntimeOptions options;
    REQUIRE(options.ApplyEnvironmentAndFinish().ok());
    CHECK(options.timeline_path == "/tmp/t.json");
    CHECK(options.timeline.first_step == 9);
    CHECK(options.timeline.last_step == 19);
  }
  {
    ScopedEnv steps("RINGWORK_TIMELINE_STEPS", "5:");
    RuntimeOptions options;
    REQUIRE(options.ApplyEnvironmentAndFinish().ok());
    CHECK(options.timeline.first_step == 4);
    CHECK(options.timeline.last_step == std::numeric_limits<int64_t>::max());
  }
  {
    RuntimeOptions options;  // Set in code, no variable: kept.
    options.timeline.first_step = 3;
    options.timeline.last_step = 4;
    REQUIRE(options.ApplyEnvironmentAndFinish().ok());
    CHECK(options.timeline.first_step == 3);
    CHECK(options.timeline.last_step == 4);
  }
  for (const char* bad : {"7", "0:5", "9:3", ":", "a:b", "-1:"}) {
    ScopedEnv steps("RINGWORK_TIMELINE_STEPS", bad);
    RuntimeOptions options;
    const absl::Status status = options.ApplyEnvironmentAndFinish();
    INFO(bad);
    REQUIRE_FALSE(status.ok());
    CHECK(status.message().find("--timeline_steps=") != std::string::npos);
  }
  ScopedEnv events("RINGWORK_TIMELINE_MAX_EVENTS", "0");
  RuntimeOptions options;
  CHECK(options.ApplyEnvironmentAndFinish().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("a token set in code is kept; options a flag parser finished are left alone",
          "[options]") {
  ScopedEnv token("RINGWORK_CLUSTER_TOKEN", "0123456789abcdef0123456789abcdef");
  ScopedEnv timeout("RINGWORK_STARTUP_TIMEOUT_S", "11");
  {
    RuntimeOptions options;
    options.cluster_token = "fedcba9876543210fedcba9876543210";
    options.collectives.allreduce_algorithm = AllReduceAlgorithm::kRecursiveDoubling;
    REQUIRE(options.ApplyEnvironmentAndFinish().ok());
    CHECK(options.cluster_token == "fedcba9876543210fedcba9876543210");
    CHECK(options.collectives.allreduce_algorithm == AllReduceAlgorithm::kRecursiveDoubling);
    CHECK(options.rendezvous.startup_timeout_s == 11);
  }
  {
    // A binary: flags (which read the environment) then Finish(); a flag wins.
    RuntimeOptions options;
    FlagSet flags("binary");
    options.Register(&flags);
    const char* argv[] = {"binary", "--startup_timeout_s=12"};
    REQUIRE(flags.Parse(2, argv).ok());
    REQUIRE(options.Finish().ok());
    options.rendezvous.startup_timeout_s = 13;  // Changed after: no second pass.
    REQUIRE(options.ApplyEnvironmentAndFinish().ok());
    CHECK(options.rendezvous.startup_timeout_s == 13);
  }
}

TEST_CASE("TLS credentials made in code win over TLS files from the environment", "[options]") {
  ScopedEnv ca("RINGWORK_TLS_CA", "/nonexistent/ca.pem");
  ScopedEnv cert("RINGWORK_TLS_CERT", "/nonexistent/cert.pem");
  ScopedEnv key("RINGWORK_TLS_KEY", "/nonexistent/key.pem");
  RuntimeOptions options;
  options.tls.server = grpc::InsecureServerCredentials();  // Stand-ins for real ones.
  options.tls.channel = grpc::InsecureChannelCredentials();
  const auto server = options.tls.server;
  REQUIRE(options.ApplyEnvironmentAndFinish().ok());
  CHECK(options.tls.server == server);
  CHECK(options.tls.enabled);
  // Without credentials in code, the environment's files are loaded (and these
  // do not exist).
  RuntimeOptions plain;
  const absl::Status missing = plain.ApplyEnvironmentAndFinish();
  CHECK(absl::IsInvalidArgument(missing));
  CHECK(std::string(missing.message()).find("/nonexistent/") != std::string::npos);
}

TEST_CASE("flags parsed but not finished keep their values when the runtime finishes them",
          "[options]") {
  ScopedEnv algorithm("RINGWORK_ALLREDUCE_ALGORITHM", "recursive_doubling");
  RuntimeOptions options;
  FlagSet flags("app");
  options.Register(&flags);
  const char* argv[] = {"app", "--allreduce_algorithm=ring", "--segment_bytes=65536"};
  REQUIRE(flags.Parse(3, argv).ok());
  REQUIRE(options.ApplyEnvironmentAndFinish().ok());
  CHECK(options.collectives.allreduce_algorithm == AllReduceAlgorithm::kRing);
  CHECK(options.collectives.segment_bytes == 65536);
}

TEST_CASE("a token set in code must be long enough", "[options]") {
  RuntimeOptions options;
  options.cluster_token = "short";
  const absl::Status status = options.ApplyEnvironmentAndFinish();
  CHECK(absl::IsInvalidArgument(status));
  CHECK(std::string(status.message()).find("5 characters") != std::string::npos);
}

TEST_CASE("a bad environment value is an error naming the variable", "[options]") {
  ScopedEnv misses("RINGWORK_HEARTBEAT_MISSES", "many");
  RuntimeOptions options;
  const absl::Status status = options.ApplyEnvironmentAndFinish();
  CHECK(absl::IsInvalidArgument(status));
  CHECK(std::string(status.message()).find("RINGWORK_HEARTBEAT_MISSES=many") != std::string::npos);
}

}  // namespace
}  // namespace ringwork
