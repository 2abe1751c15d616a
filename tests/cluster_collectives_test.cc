// Localhost clusters of real worker processes: every collective checked element by
// element over gRPC and over shared memory, for world sizes 1, 2, 3, 4 and 7, with
// workers started in reverse and in random order.
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>

#include "testing/process_cluster.h"

namespace ringwork {
namespace {

constexpr char kWorker[] = "tests/collective_check_worker";

void CheckAllPassed(const std::vector<SubprocessResult>& results, const std::string& links) {
  for (size_t i = 0; i < results.size(); ++i) {
    INFO("task " << i << " output:\n" << results[i].output);
    CHECK(results[i].exit_code == 0);
    CHECK(results[i].output.find("all collectives correct") != std::string::npos);
    CHECK(results[i].output.find(links) != std::string::npos);
  }
}

TEST_CASE("every collective over gRPC, worlds 2, 3, 4", "[cluster]") {
  for (int n : {2, 3, 4}) {
    INFO("world " << n);
    ProcessCluster cluster({kWorker, n, false, {"--transport=grpc", "--large"}});
    const std::vector<SubprocessResult> results = cluster.Run();
    CheckAllPassed(results, " grpc");
    // Every link is gRPC: every rank agreed on the network threshold.
    const std::string below =
        n == 3 ? "recursive doubling below 78643 bytes" : "recursive doubling below 1048576 bytes";
    for (const SubprocessResult& r : results) CHECK(r.output.find(below) != std::string::npos);
  }
}

// How many times `text` occurs in `output`.
size_t CountOccurrences(const std::string& output, const std::string& text) {
  size_t n = 0;
  for (size_t at = output.find(text); at != std::string::npos; at = output.find(text, at + 1)) ++n;
  return n;
}

TEST_CASE("gRPC's bandwidth-delay probe, on or off, reaches the data channels and the server",
          "[cluster]") {
  // The probe changes only the flow-control windows a worker announces, so every
  // collective must still be right. gRPC 1.51's flow-control trace logs the stream
  // window the other end of a connection announced in its SETTINGS ("<id>[cli]
  // adding N for initial_window change" on a channel, "[svr]" on a server; N =
  // window - 65535). Without the probe, DataStreamChannelSettings' lookahead gives
  // 16 MiB: a worker's channels see it from the peers' servers and its server from
  // the peers' data channels, n - 1 of each at least (the heartbeat channels, which
  // keep gRPC's defaults, see the servers' too). With the probe no end announces it
  // (the probe's window is 4 MiB at first).
  const std::string from_servers = "[cli] adding 16711681 for initial_window change";
  const std::string from_channels = "[svr] adding 16711681 for initial_window change";
  for (bool probe : {false, true}) {
    for (int n : {2, 3}) {
      INFO("world " << n << (probe ? ", probe on" : ", probe off"));
      ProcessCluster::Options options{kWorker, n, false, {"--transport=grpc"}};
      if (probe) options.args.push_back("--grpc_bdp_probe");
      options.env = {{"GRPC_TRACE", "flowctl"}, {"GRPC_VERBOSITY", "DEBUG"}};
      ProcessCluster cluster(options);
      const std::vector<SubprocessResult> results = cluster.Run();
      CheckAllPassed(results, " grpc");
      const size_t peers = static_cast<size_t>(n - 1);
      for (const SubprocessResult& r : results) {
        CHECK((r.output.find("gRPC bandwidth-delay probe on") != std::string::npos) == probe);
        if (probe) {
          CHECK(CountOccurrences(r.output, from_servers) == 0);
          CHECK(CountOccurrences(r.output, from_channels) == 0);
        } else {
          CHECK(CountOccurrences(r.output, from_servers) >= peers);
          CHECK(CountOccurrences(r.output, from_channels) >= peers);
        }
      }
    }
  }
}

TEST_CASE("every collective over shared memory, worlds 2 and 4 with a chief", "[cluster]") {
  for (int n : {1, 3}) {
    INFO("workers " << n << " + chief");
    ProcessCluster cluster({kWorker, n, true, {"--large"}});
    CheckAllPassed(cluster.Run(), " shm");
  }
}

TEST_CASE("world 7 over gRPC and shared memory", "[cluster]") {
  for (const char* transport : {"--transport=grpc", "--transport=auto"}) {
    INFO(transport);
    ProcessCluster cluster({kWorker, 7, false, {transport}, {}, 240});
    const bool grpc = transport == std::string("--transport=grpc");
    const std::vector<SubprocessResult> results = cluster.Run();
    CheckAllPassed(results, grpc ? " grpc" : " shm");
    // Shared memory: 64 KiB x 2(p-1) / (2 ceil(log2 p)) = 128 KiB; gRPC: 448 KiB.
    const std::string below =
        grpc ? "recursive doubling below 458752 bytes" : "recursive doubling below 131072 bytes";
    for (const SubprocessResult& r : results) CHECK(r.output.find(below) != std::string::npos);
  }
}

TEST_CASE("a world of one needs no TF_CONFIG", "[cluster]") {
  Subprocess::Options options;
  options.unset_env = {"TF_CONFIG"};
  SubprocessResult r = RunSubprocess({kWorker}, options);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("single-worker local mode") != std::string::npos);
  CHECK(r.output.find("all collectives correct") != std::string::npos);
}

TEST_CASE("workers started in reverse order join", "[cluster][start_order]") {
  ProcessCluster cluster({kWorker, 4, false, {"--transport=grpc"}});
  cluster.SetStartOrder({3, 2, 1, 0}, 0.4);
  CheckAllPassed(cluster.Run(), " grpc");
}

TEST_CASE("workers started in random order join", "[cluster][start_order]") {
  std::mt19937 random(20261202);
  for (int round = 0; round < 2; ++round) {
    ProcessCluster cluster({kWorker, 3, true, {}});
    std::vector<int> order = {0, 1, 2, 3};
    std::shuffle(order.begin(), order.end(), random);
    cluster.SetStartOrder(order, 0.3);
    CheckAllPassed(cluster.Run(), " shm");
  }
}

}  // namespace
}  // namespace ringwork
