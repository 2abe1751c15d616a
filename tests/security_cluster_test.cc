// Who may talk to a worker, on localhost clusters of real `train` processes: calls
// without the cluster token, with a wrong one, from another cluster, data streams
// injected with the right token, oversized messages and random bytes are refused
// (each logged once) while a training run goes on to the weights of an undisturbed
// run; a worker with another token is refused with exit 6; a worker listens only on
// its own address; mutual TLS admits only certificates of the cluster's CA.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "proto/worker.grpc.pb.h"
#include "runtime/auth/rpc_auth.h"
#include "runtime/config/cluster_config.h"
#include "runtime/transport/grpc/rendezvous.h"
#include "testing/process_cluster.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

namespace fs = std::filesystem;

constexpr char kTrain[] = "tools/train";
constexpr double kGuardS = 90;
const std::string kToken = "4f1c2a9be07d3658c1aa0e77b2d94c61";

std::string FingerprintIn(const std::string& output) {
  std::smatch m;
  if (!std::regex_search(output, m, std::regex("weights fingerprint ([0-9a-f]{16})"))) return "";
  return m[1];
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Connects to host:port; when it connects, sends `bytes` and waits (at most 2 s)
// for the server to close. False when the connection is refused.
bool SendRaw(const std::string& host, int port, const std::string& bytes) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return false;
  }
  (void)!::write(fd, bytes.data(), bytes.size());
  char buffer[4096];
  const double until = MonotonicSeconds() + 2;
  while (MonotonicSeconds() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    if (::read(fd, buffer, sizeof(buffer)) <= 0) break;
  }
  ::close(fd);
  return true;
}

std::unique_ptr<proto::Worker::Stub> Stub(
    const std::string& address,
    std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials()) {
  // Retry connecting often: the worker may not be listening yet.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 2000);  // Also the connect timeout.
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return proto::Worker::NewStub(grpc::CreateCustomChannel(address, credentials, args));
}

grpc::Status Heartbeat(proto::Worker::Stub& stub, const CallMetadata& metadata,
                       proto::HeartbeatResponse* response = nullptr, bool wait_for_ready = true) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
  // Waits for the connection: a synchronous client makes progress on connecting
  // only while a call waits (a fail-fast call would return at once, and the
  // connection attempt would time out unattended).
  context.set_wait_for_ready(wait_for_ready);
  for (const auto& [k, v] : metadata) context.AddMetadata(k, v);
  proto::HeartbeatRequest request;
  proto::HeartbeatResponse ignored;
  return stub.Heartbeat(&context, request, response != nullptr ? response : &ignored);
}

// Heartbeats until the worker answers something other than "not up / still
// starting" (at most 30 s); returns that answer.
grpc::Status FirstAnswer(proto::Worker::Stub& stub, const CallMetadata& metadata,
                         proto::HeartbeatResponse* response = nullptr) {
  grpc::Status status;
  const double until = MonotonicSeconds() + 30;
  do {
    status = Heartbeat(stub, metadata, response);
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE &&
        status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (MonotonicSeconds() < until);
  return status;
}

// The incarnation `stub`'s worker challenges a call with (UNAUTHENTICATED with
// trailing rw-challenge), waiting for it to start (at most 30 s); 0 if none came.
uint64_t Challenge(proto::Worker::Stub& stub, const RpcAuth& caller, int to_rank) {
  const double until = MonotonicSeconds() + 30;
  do {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
    context.set_wait_for_ready(true);  // As in Heartbeat() above.
    for (const auto& [k, v] : caller.CallMetadataFor(RpcMethod::kHeartbeat, to_rank, 0)) {
      context.AddMetadata(k, v);
    }
    proto::HeartbeatResponse response;
    const grpc::Status status = stub.Heartbeat(&context, proto::HeartbeatRequest(), &response);
    if (status.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
      auto it = context.GetServerTrailingMetadata().find(kChallengeMetadataKey);
      if (it == context.GetServerTrailingMetadata().end()) return 0;
      return std::stoull(std::string(it->second.data(), it->second.size()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (MonotonicSeconds() < until);
  return 0;
}

std::string ClusterFingerprint(const ProcessCluster& cluster) {
  return ClusterConfig(cluster.spec(), cluster.task(0), "test").Fingerprint();
}

const std::vector<std::string> kTrainArgs = {
    "--dataset=synthetic", "--synthetic_examples=4096", "--global_batch_size=128", "--epochs=150",
    "--verbose=0",         "--intra_op_threads=1"};

TEST_CASE("refused calls leave a training run to the weights of an undisturbed one", "[security]") {
  const std::map<std::string, std::string> env = {{"RINGWORK_CLUSTER_TOKEN", kToken}};
  ProcessCluster undisturbed({kTrain, 2, false, kTrainArgs, env, kGuardS});
  std::vector<SubprocessResult> baseline = undisturbed.Run();
  for (const auto& r : baseline) REQUIRE(r.exit_code == 0);
  const std::string expected = FingerprintIn(baseline[0].output);
  REQUIRE(!expected.empty());

  ProcessCluster cluster({kTrain, 2, false, kTrainArgs, env, kGuardS});
  std::vector<std::unique_ptr<Subprocess>> workers;
  for (int i = 0; i < 2; ++i) {
    Subprocess::Options options;
    options.env = env;
    options.env["TF_CONFIG"] = cluster.tf_config(i);
    options.timeout_s = kGuardS;
    std::vector<std::string> argv = {kTrain};
    argv.insert(argv.end(), kTrainArgs.begin(), kTrainArgs.end());
    workers.push_back(std::make_unique<Subprocess>(Subprocess::Start(argv, options)));
  }
  const std::string fingerprint = ClusterFingerprint(cluster);
  auto worker0 = Stub(cluster.address(0));
  auto worker1 = Stub(cluster.address(1));
  // Whoever holds the token can learn a worker's incarnation from its challenge
  // and make calls bound to it: answered.
  const RpcAuth insider(kToken, fingerprint, 0, 1);
  const uint64_t w1 = Challenge(*worker1, insider, 1);
  REQUIRE(w1 != 0);
  proto::HeartbeatResponse w1_reply;
  const grpc::Status first =
      Heartbeat(*worker1, insider.CallMetadataFor(RpcMethod::kHeartbeat, 1, w1), &w1_reply);
  INFO(first.error_message());
  REQUIRE(first.ok());
  REQUIRE(w1_reply.incarnation() == w1);
  const uint64_t w0 = Challenge(*worker0, insider, 0);
  REQUIRE(w0 != 0);
  // Worker 0 is past startup, and worker 1's data stream to it long open (streams
  // open right after the rendezvous), once it trains a few steps.
  const double until = MonotonicSeconds() + 30;
  proto::HeartbeatResponse w0_reply;
  while (
      MonotonicSeconds() < until &&
      Heartbeat(*worker0, insider.CallMetadataFor(RpcMethod::kHeartbeat, 0, w0), &w0_reply).ok() &&
      w0_reply.step() < 3) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(w0_reply.step() >= 3);

  // No token (twice: logged once), no identity, a wrong token, the right one for
  // another cluster.
  for (int i = 0; i < 2; ++i) {
    CHECK(Heartbeat(*worker0,
                    RpcAuth("", fingerprint, 1, 5).CallMetadataFor(RpcMethod::kHeartbeat, 0, w0))
              .error_code() == grpc::StatusCode::UNAUTHENTICATED);
  }
  CHECK(Heartbeat(*worker0, {}).error_code() == grpc::StatusCode::UNAUTHENTICATED);
  CHECK(Heartbeat(*worker0, RpcAuth("a-token-of-another-job-0000", fingerprint, 1, 5)
                                .CallMetadataFor(RpcMethod::kHeartbeat, 0, w0))
            .error_code() == grpc::StatusCode::UNAUTHENTICATED);
  CHECK(Heartbeat(
            *worker0,
            RpcAuth(kToken, "another-cluster", 1, 5).CallMetadataFor(RpcMethod::kHeartbeat, 0, w0))
            .error_code() == grpc::StatusCode::PERMISSION_DENIED);
  // A call of an earlier run of this job (same token, cluster and rank; the worker
  // then had another incarnation), replayed now.
  CHECK(Heartbeat(*worker0, RpcAuth(kToken, fingerprint, 1, 5)
                                .CallMetadataFor(RpcMethod::kHeartbeat, 0, w0 ^ 0x5a5a))
            .error_code() == grpc::StatusCode::UNAUTHENTICATED);
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
    proto::JoinRequest join;
    join.set_from_rank(1);
    proto::JoinResponse response;
    CHECK(worker0->Join(&context, join, &response).error_code() ==
          grpc::StatusCode::UNAUTHENTICATED);
  }
  // A Join for a member of the running job (rank 1, as another process), signed
  // and bound right: refused (ALREADY_EXISTS). The same Join with its segment
  // changed after signing: refused (UNAUTHENTICATED).
  for (bool tampered : {false, true}) {
    const uint64_t intruder = w1 + 1;
    proto::JoinRequest join;
    join.set_protocol_version(kProtocolVersion);
    join.set_cluster_fingerprint(fingerprint);
    join.set_from_rank(1);
    join.set_to_rank(0);
    join.set_from_task("worker:1");
    join.set_incarnation(intruder);
    join.set_shm_segment("/ringwork-1-1");
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
    for (const auto& [k, v] :
         RpcAuth(kToken, fingerprint, 1, intruder)
             .CallMetadataFor(RpcMethod::kJoin, 0, w0, SignedJoinFields(join))) {
      context.AddMetadata(k, v);
    }
    if (tampered) join.set_shm_segment("/ringwork-2-2");
    proto::JoinResponse response;
    const grpc::Status status = worker0->Join(&context, join, &response);
    INFO(status.error_message());
    CHECK(status.error_code() ==
          (tampered ? grpc::StatusCode::UNAUTHENTICATED : grpc::StatusCode::ALREADY_EXISTS));
  }
  // Data streams with the right token: one claiming worker:1 (which already has its
  // stream), one with an incarnation that never joined, one with a Heartbeat's
  // metadata, one with a data call's signed answer (its server's proof) and one
  // bound to an earlier run's worker:0. All are cut off.
  const std::vector<CallMetadata> streams = {
      RpcAuth(kToken, fingerprint, 1, w1).CallMetadataFor(RpcMethod::kTransfer, 0, w0),
      RpcAuth(kToken, fingerprint, 1, w1 + 1).CallMetadataFor(RpcMethod::kTransfer, 0, w0),
      RpcAuth(kToken, fingerprint, 1, w1).CallMetadataFor(RpcMethod::kHeartbeat, 0, w0),
      RpcAuth(kToken, fingerprint, 1, w1).CallMetadataFor(RpcMethod::kTransferReply, 0, w0),
      RpcAuth(kToken, fingerprint, 1, w1).CallMetadataFor(RpcMethod::kTransfer, 0, w0 ^ 0x5a5a)};
  for (const CallMetadata& metadata : streams) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    for (const auto& [k, v] : metadata) context.AddMetadata(k, v);
    std::unique_ptr<grpc::ClientReaderWriter<proto::RawFrame, proto::RawFrame>> stream =
        worker0->Transfer(&context);
    for (int i = 0; i < 10 && stream->Write(proto::RawFrame()); ++i) {
    }
    stream->WritesDone();
    proto::RawFrame frame;
    CHECK(!stream->Read(&frame));  // Nothing comes back on a refused call.
    CHECK(!stream->Finish().ok());
  }
  // A Join over the small limit for control messages, signed right, and one over
  // the server's limit, with no token.
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    for (const auto& [k, v] :
         RpcAuth(kToken, fingerprint, 1, w1).CallMetadataFor(RpcMethod::kJoin, 0, w0)) {
      context.AddMetadata(k, v);
    }
    proto::JoinRequest big;
    big.set_hostname(std::string(8 << 10, 'x'));
    proto::JoinResponse response;
    const grpc::Status status = worker0->Join(&context, big, &response);
    INFO(status.error_message());
    CHECK(status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    proto::JoinRequest join;
    join.set_hostname(std::string(64 << 20, 'x'));
    proto::JoinResponse response;
    CHECK(worker0->Join(&context, join, &response).error_code() ==
          grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  // Random bytes on the port.
  std::mt19937 random(7);
  std::string noise(8192, '\0');
  for (char& c : noise) c = static_cast<char>(random());
  const int port = std::stoi(cluster.address(0).substr(cluster.address(0).rfind(':') + 1));
  for (int i = 0; i < 3; ++i) CHECK(SendRaw("127.0.0.1", port, noise));

  std::vector<SubprocessResult> results;
  for (auto& w : workers) results.push_back(w->Wait());
  for (const auto& r : results) {
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(FingerprintIn(r.output) == expected);
  }
  const std::string& log = results[0].output;
  INFO(log);
  CHECK(Count(log, "refused a Heartbeat from ipv4:127.0.0.1: the call carries no cluster token") ==
        1);
  CHECK(Count(log, "refused a Heartbeat from ipv4:127.0.0.1: the call does not identify") == 1);
  CHECK(Count(log, "refused a Heartbeat from ipv4:127.0.0.1: the call's cluster token is wrong") ==
        1);
  CHECK(Count(log,
              "refused a Heartbeat from ipv4:127.0.0.1: the caller (rank 1) belongs to cluster "
              "another-cluster") == 1);
  CHECK(Count(log,
              "refused a Heartbeat from ipv4:127.0.0.1: the call is meant for rank 0 incarnation " +
                  std::to_string(w0 ^ 0x5a5a)) == 1);
  CHECK(Count(log, "refused a Join from ipv4:127.0.0.1: the call does not identify") == 1);
  CHECK(
      Count(log,
            "refused a Join from ipv4:127.0.0.1: rank 1 is a member of this running job already") ==
      1);
  CHECK(Count(log, "refused a Join from ipv4:127.0.0.1: a ringwork.proto.JoinRequest of") == 1);
  CHECK(Count(log,
              "refused a Join from ipv4:127.0.0.1: the request is not the one its caller signed") ==
        1);
  CHECK(Count(log,
              "refused a data stream from ipv4:127.0.0.1: it did not identify as a joined peer") ==
        1);
  CHECK(Count(log,
              "refused a data stream from ipv4:127.0.0.1: the call's cluster token is wrong") == 1);
  CHECK(Count(log, "refused a data stream from ipv4:127.0.0.1: the call is meant for rank 0") == 1);
  CHECK(Count(log, "refused a second data stream from worker:1") == 1);
}

TEST_CASE("an app that embeds the strategy takes the token and timeouts from the environment",
          "[security]") {
  // Worker 0 of two, alone: it waits for its peer while the test calls it.
  const std::map<std::string, std::string> env = {{"RINGWORK_CLUSTER_TOKEN", kToken},
                                                  {"RINGWORK_STARTUP_TIMEOUT_S", "8"}};
  ProcessCluster cluster({"examples/custom_training_loop", 2, false, {}, env, kGuardS});
  cluster.Skip(1);
  const double start = MonotonicSeconds();
  grpc::Status status;  // Checked on this thread: Catch2 is not thread-safe.
  std::thread probe([&] {
    auto worker0 = Stub(cluster.address(0));
    status = FirstAnswer(*worker0, RpcAuth("", ClusterFingerprint(cluster), 1, 5)
                                       .CallMetadataFor(RpcMethod::kHeartbeat, 0, 1));
  });
  std::vector<SubprocessResult> results = cluster.Run();
  probe.join();
  INFO(status.error_message());
  CHECK(status.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  CHECK(status.error_message().find("carries no cluster token") != std::string::npos);
  INFO(results[0].output);
  CHECK(results[0].exit_code == 4);  // RINGWORK_STARTUP_TIMEOUT_S reached it (default: 300 s).
  CHECK(results[0].output.find("gave up after 8 s") != std::string::npos);
  CHECK(MonotonicSeconds() - start < 40);
  CHECK(results[0].output.find("refused a Heartbeat from ipv4:127.0.0.1: the call carries no "
                               "cluster token") != std::string::npos);
}

TEST_CASE("a worker with another token, or none, is refused with exit 6", "[security]") {
  const std::string dir = FreshTestDir("tokens");
  const std::string ours = dir + "/ours", theirs = dir + "/theirs";
  std::ofstream(ours) << kToken;
  std::ofstream(theirs) << "0000000000000000ffffffffffffffff";
  fs::permissions(ours, fs::perms::owner_read | fs::perms::owner_write);
  fs::permissions(theirs, fs::perms::owner_read | fs::perms::owner_write);
  const std::vector<std::string> args = {"--dataset=synthetic", "--epochs=1", "--verbose=0",
                                         "--startup_timeout_s=5"};
  SECTION("another token: both refuse each other") {
    ProcessCluster cluster({kTrain, 2, false, args, {}, kGuardS});
    cluster.AddArgs(0, {"--cluster_token_file=" + ours});
    cluster.AddArgs(1, {"--cluster_token_file=" + theirs});
    // Each refuses the other's Join; the first to be refused exits 6, and the
    // other may find it gone before its own Join is refused (then its startup
    // deadline ends it: exit 4). Either way it logged the refusal.
    int refused = 0;
    for (const auto& r : cluster.Run()) {
      INFO(r.output);
      CHECK(!r.timed_out);
      CHECK((r.exit_code == 6 || r.exit_code == 4));
      refused += r.exit_code == 6 ? 1 : 0;
      CHECK(r.output.find("token is wrong") != std::string::npos);
      CHECK(r.output.find(kToken) == std::string::npos);  // Never printed.
    }
    CHECK(refused >= 1);
  }
  SECTION("no token: refused by the one that has one") {
    ProcessCluster cluster({kTrain, 2, false, args, {}, kGuardS});
    cluster.AddArgs(0, {"--cluster_token_file=" + ours});
    std::vector<SubprocessResult> results = cluster.Run();
    INFO(results[1].output);
    CHECK(results[1].exit_code == 6);
    CHECK(results[1].output.find("refused to join") != std::string::npos);
    CHECK(results[1].output.find("carries no cluster token") != std::string::npos);
    INFO(results[0].output);
    CHECK(!results[0].timed_out);
    CHECK(results[0].exit_code != 0);
  }
}

TEST_CASE("a worker listens only on its own address", "[security]") {
  ProcessCluster cluster(
      {kTrain, 2, false, {"--dataset=synthetic", "--startup_timeout_s=4"}, {}, kGuardS});
  Subprocess::Options options;
  options.env["TF_CONFIG"] = cluster.tf_config(0);
  options.timeout_s = kGuardS;
  Subprocess worker =
      Subprocess::Start({kTrain, "--dataset=synthetic", "--startup_timeout_s=4"}, options);
  const int port = std::stoi(cluster.address(0).substr(cluster.address(0).rfind(':') + 1));
  bool listening = false;
  for (int i = 0; i < 100 && !listening; ++i) {
    listening = SendRaw("127.0.0.1", port, "");
    if (!listening) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(listening);
  CHECK_FALSE(SendRaw("127.0.0.2", port, ""));  // Loopback, but not its address.
  SubprocessResult r = worker.Wait();
  CHECK(r.exit_code == 4);  // Its peer never came.
}

// A CA and worker certificates for 127.0.0.1, made with Debian's openssl.
struct Pki {
  std::string dir;
  std::string ca, cert, key, other_ca_cert, other_ca_key;
};

Pki MakePki() {
  Pki pki;
  pki.dir = FreshTestDir("pki");
  const std::string script = R"(set -e
cd ")" + pki.dir + R"("
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$1" 2>/dev/null; }
ca() { key "$1.key"; openssl req -x509 -new -key "$1.key" -out "$1.pem" -days 1 -subj "/CN=$1"; }
cert() {  # name ca
  key "$1.key"
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$1"
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -out "$1.pem" \
    -days 1 -extfile "$1.ext" 2>/dev/null
}
ca ca; ca otherca
cert worker ca; cert stranger otherca
)";
  SubprocessResult r = RunSubprocess({"/bin/sh", "-c", script}, {});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  pki.ca = pki.dir + "/ca.pem";
  pki.cert = pki.dir + "/worker.pem";
  pki.key = pki.dir + "/worker.key";
  pki.other_ca_cert = pki.dir + "/stranger.pem";
  pki.other_ca_key = pki.dir + "/stranger.key";
  return pki;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST_CASE("mutual TLS: workers train over it; no or a foreign certificate cannot connect",
          "[security][tls]") {
  const Pki pki = MakePki();
  const std::vector<std::string> tls = {"--tls_ca=" + pki.ca, "--tls_cert=" + pki.cert,
                                        "--tls_key=" + pki.key, "--transport=grpc"};
  std::vector<std::string> args = {"--dataset=synthetic", "--epochs=2", "--verbose=0"};
  args.insert(args.end(), tls.begin(), tls.end());
  const std::map<std::string, std::string> env = {{"RINGWORK_CLUSTER_TOKEN", kToken}};
  {
    ProcessCluster cluster({kTrain, 2, false, args, env, kGuardS});
    std::vector<SubprocessResult> results = cluster.Run();
    for (const auto& r : results) {
      INFO(r.output);
      CHECK(r.exit_code == 0);
      CHECK(r.output.find("links: worker:") != std::string::npos);
    }
    CHECK(FingerprintIn(results[0].output) == FingerprintIn(results[1].output));
  }
  // One worker waiting for its (never started) peer: probe its port.
  ProcessCluster cluster({kTrain, 2, false, {}, env, kGuardS});
  Subprocess::Options options;
  options.env = env;
  options.env["TF_CONFIG"] = cluster.tf_config(0);
  options.timeout_s = kGuardS;
  std::vector<std::string> argv = {kTrain, "--dataset=synthetic", "--startup_timeout_s=15"};
  argv.insert(argv.end(), tls.begin(), tls.end());
  Subprocess worker = Subprocess::Start(argv, options);
  const RpcAuth caller(kToken, ClusterFingerprint(cluster), 1, 5);
  auto with = [&](const std::string& key, const std::string& cert) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = Read(pki.ca);
    ssl.pem_private_key = key.empty() ? "" : Read(key);
    ssl.pem_cert_chain = cert.empty() ? "" : Read(cert);
    return Stub(cluster.address(0), grpc::SslCredentials(ssl));
  };
  // A member's certificate gets an answer (the worker is still starting up, but
  // the call got through TLS and the token check).
  auto member = with(pki.key, pki.cert);
  const uint64_t incarnation = Challenge(*member, caller, 0);
  REQUIRE(incarnation != 0);
  const CallMetadata identity = caller.CallMetadataFor(RpcMethod::kHeartbeat, 0, incarnation);
  grpc::Status answered;
  std::string attempts;
  const double until = MonotonicSeconds() + 30;
  do {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
    context.set_wait_for_ready(true);  // Until the worker listens.
    for (const auto& [k, v] : identity) context.AddMetadata(k, v);
    proto::HeartbeatResponse response;
    answered = member->Heartbeat(&context, proto::HeartbeatRequest(), &response);
    attempts += absl::StrCat(MonotonicSeconds(), " ", answered.error_message(), "\n");
  } while (!answered.ok() && MonotonicSeconds() < until);
  INFO(attempts);
  CHECK(answered.ok());
  // Plaintext, TLS without a client certificate, a certificate of another CA.
  for (auto* name : {"plaintext", "no client certificate", "another CA"}) {
    INFO(name);
    std::unique_ptr<proto::Worker::Stub> stub =
        std::string(name) == "plaintext"    ? Stub(cluster.address(0))
        : std::string(name) == "another CA" ? with(pki.other_ca_key, pki.other_ca_cert)
                                            : with("", "");
    // Fail fast: these connections never become ready.
    grpc::Status refused = Heartbeat(*stub, identity, nullptr, /*wait_for_ready=*/false);
    CHECK(refused.error_code() == grpc::StatusCode::UNAVAILABLE);
    CHECK(refused.error_message().find("still starting") == std::string::npos);
  }
  SubprocessResult r = worker.Wait();
  INFO(r.output);
  CHECK(r.exit_code == 4);
}

}  // namespace
}  // namespace ringwork
