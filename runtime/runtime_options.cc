#include "runtime/runtime_options.h"

#include <cstdlib>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/auth/cluster_token.h"

namespace ringwork {
namespace {

// "A:B", "A:", ":B" (steps from 1) -> 0-based first and last step; "" leaves what
// the code set (by default every step).
absl::Status ParseTimelineSteps(const std::string& text, Timeline::Options* options) {
  if (text.empty()) return absl::OkStatus();
  const size_t colon = text.find(':');
  auto invalid = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("--timeline_steps=", text,
                     ": expected A:B, A: or :B with steps counted from 1 and A <= B"));
  };
  if (colon == std::string::npos) return invalid();
  const std::string first = text.substr(0, colon), last = text.substr(colon + 1);
  int64_t a = 1, b = std::numeric_limits<int64_t>::max();
  if ((first.empty() && last.empty()) || (!first.empty() && !absl::SimpleAtoi(first, &a)) ||
      (!last.empty() && !absl::SimpleAtoi(last, &b)) || a < 1 || b < a) {
    return invalid();
  }
  options->first_step = a - 1;
  options->last_step = last.empty() ? b : b - 1;
  return absl::OkStatus();
}

}  // namespace

void RuntimeOptions::Register(FlagSet* flags) {
  flags->Double("startup_timeout_s", &rendezvous.startup_timeout_s,
                "how long a worker waits for all its peers to come up",
                "RINGWORK_STARTUP_TIMEOUT_S");
  flags->Double("first_step_timeout_s", &first_step_timeout_s,
                "deadline of each collective until the first training step has ended "
                "(initial broadcast, first all-reduces)",
                "RINGWORK_FIRST_STEP_TIMEOUT_S");
  flags->Double("collective_timeout_s", &collectives.timeout_s,
                "deadline of one collective (all-reduce, broadcast, ...) after the "
                "first step",
                "RINGWORK_COLLECTIVE_TIMEOUT_S");
  flags->Double("heartbeat_interval_s", &heartbeat.interval_s,
                "how often a worker checks that each peer answers",
                "RINGWORK_HEARTBEAT_INTERVAL_S");
  flags->Int("heartbeat_misses", &heartbeat.misses,
             "missed heartbeat intervals after which a peer is declared failed",
             "RINGWORK_HEARTBEAT_MISSES");
  flags->Double("stall_warning_s", &heartbeat.stall_warning_s,
                "after how long a waiting collective is reported with the peers that "
                "have not reached it (repeated every period)",
                "RINGWORK_STALL_WARNING_S");
  flags->Int("segment_bytes", &segment_bytes_,
             "largest piece of a pipelined collective sent in one frame; 0: what the "
             "links prefer (256 KiB shared memory, 1 MiB gRPC), the smallest over all "
             "workers",
             "RINGWORK_SEGMENT_BYTES");
  flags->String("allreduce_algorithm", &allreduce_algorithm_,
                "auto, ring, recursive_doubling or hierarchical (within hosts over shared "
                "memory, across hosts one ring per local worker; needs the same number of "
                "workers on every host, else the ring runs)",
                "RINGWORK_ALLREDUCE_ALGORITHM");
  flags->String("transport", &transport_kind,
                "auto (shared memory between workers on one host, gRPC otherwise) or "
                "grpc (gRPC for every peer)",
                "RINGWORK_TRANSPORT");
  flags->Bool("grpc_bdp_probe", &grpc_bdp_probe,
              "let gRPC's bandwidth-delay probe size each data connection's flow-control "
              "window (else 64 KiB: a frame over that waits one round trip)",
              "RINGWORK_GRPC_BDP_PROBE");
  flags->Int("shm_ring_bytes", &shm_ring_bytes,
             "bytes of each shared-memory ring between two local workers",
             "RINGWORK_SHM_RING_BYTES");
  flags->Double("spin_us", &spin_us,
                "how long a waiting worker polls (shared-memory rings and gRPC's "
                "completion queue) before it sleeps; 0: never spin; -1: automatic (50)",
                "RINGWORK_SPIN_US");
  flags->String("timeline", &timeline_path,
                "write a Chrome trace-event timeline of this worker (chrome://tracing, "
                "Perfetto) to this file at exit; launch --timeline merges every task's",
                "RINGWORK_TIMELINE");
  flags->String("timeline_steps", &timeline_steps_,
                "record only training steps A to B of the run (A:B, counted from 1; A: or :B "
                "leave one end open); startup is always recorded",
                "RINGWORK_TIMELINE_STEPS");
  flags->Int("timeline_max_events", &timeline.max_events,
             "most events a timeline keeps (about 200 bytes each); the oldest are dropped",
             "RINGWORK_TIMELINE_MAX_EVENTS");
  flags->Bool("tune_malloc", &tune_malloc,
              "keep freed large blocks in the process (faster gRPC receives); "
              "changes malloc settings for the whole process",
              "RINGWORK_TUNE_MALLOC");
  flags->Double("shutdown_timeout_s", &shutdown_timeout_s, "how long an orderly shutdown may take",
                "RINGWORK_SHUTDOWN_TIMEOUT_S");
  flags->String("cluster_token_file", &cluster_token_file,
                "a file holding the secret every task of the job shares; every RPC is "
                "authenticated with it (or set env RINGWORK_CLUSTER_TOKEN; launch makes one)",
                "RINGWORK_CLUSTER_TOKEN_FILE");
  flags->String("tls_ca", &tls_files.ca,
                "mutual TLS: the CA certificate (PEM) that signs every worker's",
                "RINGWORK_TLS_CA");
  flags->String("tls_cert", &tls_files.cert, "mutual TLS: this worker's certificate (PEM)",
                "RINGWORK_TLS_CERT");
  flags->String("tls_key", &tls_files.key, "mutual TLS: this worker's private key (PEM)",
                "RINGWORK_TLS_KEY");
}

absl::Status RuntimeOptions::ApplyEnvironmentAndFinish() {
  if (finished_) return absl::OkStatus();
  // The flag-level mirrors of nested fields the code may have set directly (unless
  // a flag parser already set the mirror).
  if (allreduce_algorithm_ == "auto") {
    allreduce_algorithm_ = std::string(AllReduceAlgorithmName(collectives.allreduce_algorithm));
  }
  if (segment_bytes_ == 0) segment_bytes_ = static_cast<int64_t>(collectives.segment_bytes);
  RuntimeOptions stock;
  FlagSet stock_flags("defaults"), flags("environment");
  stock.Register(&stock_flags);
  Register(&flags);
  RW_RETURN_IF_ERROR(flags.ParseEnvironment(
      [&](const std::string& name) { return flags.SameValue(name, stock_flags); }));
  return Finish();
}

absl::Status RuntimeOptions::Finish() {
  if (finished_) return absl::OkStatus();
  if (!ParseAllReduceAlgorithm(allreduce_algorithm_, &collectives.allreduce_algorithm)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--allreduce_algorithm=", allreduce_algorithm_,
                     ": expected auto, ring, recursive_doubling or hierarchical"));
  }
  if (transport_kind != "auto" && transport_kind != "grpc") {
    return absl::InvalidArgumentError(
        absl::StrCat("--transport=", transport_kind, ": expected auto or grpc"));
  }
  if (segment_bytes_ != 0 &&
      (segment_bytes_ < 64 || segment_bytes_ > static_cast<int64_t>(grpc.max_payload_bytes))) {
    return absl::InvalidArgumentError(absl::StrCat("--segment_bytes=", segment_bytes_,
                                                   ": expected 0 (automatic) or 64..",
                                                   grpc.max_payload_bytes));
  }
  collectives.segment_bytes = static_cast<size_t>(segment_bytes_);
  RW_RETURN_IF_ERROR(ParseTimelineSteps(timeline_steps_, &timeline));
  if (timeline.max_events < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--timeline_max_events=", timeline.max_events, ": expected at least 1"));
  }
  if (shm_ring_bytes < (64 << 10) || shm_ring_bytes > (1 << 30) ||
      (shm_ring_bytes & (shm_ring_bytes - 1)) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--shm_ring_bytes=", shm_ring_bytes,
                                                   ": expected a power of two from 65536 to 2^30"));
  }
  for (auto [name, value] :
       {std::pair<const char*, double>{"startup_timeout_s", rendezvous.startup_timeout_s},
        {"first_step_timeout_s", first_step_timeout_s},
        {"collective_timeout_s", collectives.timeout_s},
        {"heartbeat_interval_s", heartbeat.interval_s},
        {"stall_warning_s", heartbeat.stall_warning_s},
        {"shutdown_timeout_s", shutdown_timeout_s}}) {
    if (!(value > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, "=", value, ": expected a positive number of seconds"));
    }
  }
  if (heartbeat.misses < 1 || heartbeat.misses > 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("--heartbeat_misses=", heartbeat.misses, ": expected 1..1000"));
  }
  if (spin_us < -1) {
    return absl::InvalidArgumentError("--spin_us: expected -1 (automatic) or >= 0");
  }
  if (cluster_token.empty()) {
    absl::StatusOr<std::string> token =
        LoadClusterToken(cluster_token_file, std::getenv(kClusterTokenEnv));
    if (!token.ok()) return token.status();
    cluster_token = *token;
  } else if (cluster_token.size() < kMinClusterTokenBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the cluster token set in code has ", cluster_token.size(),
                     " characters; use at least ", kMinClusterTokenBytes));
  }
  if (tls.server != nullptr || tls.channel != nullptr) {
    // Credentials made in code win over files named by flags or the environment.
    if (tls.server == nullptr || tls.channel == nullptr) {
      return absl::InvalidArgumentError(
          "TLS credentials set in code need both the server and the channel credentials");
    }
    tls.enabled = true;
  } else {
    absl::StatusOr<TlsCredentials> credentials = LoadTlsCredentials(tls_files);
    if (!credentials.ok()) return credentials.status();
    tls = *credentials;
  }
  finished_ = true;
  return absl::OkStatus();
}

}  // namespace ringwork
