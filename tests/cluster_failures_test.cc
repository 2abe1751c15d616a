// Localhost clusters of real worker processes that fail: a task that never starts,
// one that is killed mid-run, one that disagrees about a collective or about the
// cluster. Every other task must exit with the documented code, within its bound,
// with a message that names the culprit.
#include <catch2/catch.hpp>

#include "testing/process_cluster.h"

namespace ringwork {
namespace {

constexpr char kWorker[] = "tests/collective_check_worker";

TEST_CASE("a missing worker makes the others exit 4 at the startup deadline, naming it",
          "[cluster][failures]") {
  ProcessCluster cluster({kWorker, 3, false, {"--startup_timeout_s=3"}});
  cluster.Skip(2);
  std::vector<SubprocessResult> results = cluster.Run();
  const std::string missing = "worker:2 (" + cluster.address(2) + "): not reachable";
  for (int i = 0; i < 2; ++i) {
    INFO(results[i].output);
    CHECK(results[i].exit_code == 4);
    CHECK(results[i].elapsed_s >= 3);
    CHECK(results[i].elapsed_s < 8);
    CHECK(results[i].output.find("startup: gave up after 3 s waiting for 1 of 2 peers") !=
          std::string::npos);
    CHECK(results[i].output.find(missing) != std::string::npos);
    CHECK(results[i].output.find("--startup_timeout_s") != std::string::npos);
  }
}

TEST_CASE("the startup wait reports who is missing while it waits", "[cluster][failures]") {
  ProcessCluster cluster({kWorker, 2, false, {"--startup_timeout_s=7"}});
  cluster.Skip(1);
  std::vector<SubprocessResult> results = cluster.Run();
  INFO(results[0].output);
  CHECK(results[0].exit_code == 4);
  CHECK(results[0].output.find("startup: waiting for 1 of 1 peers after 5 s") != std::string::npos);
}

TEST_CASE("a killed worker makes every other worker exit 3 promptly", "[cluster][failures]") {
  for (const char* transport : {"--transport=grpc", "--transport=auto"}) {
    INFO(transport);
    ProcessCluster cluster({kWorker, 3, false, {transport, "--collective_timeout_s=60"}});
    cluster.AddArgs(1, {"--die_after=40"});
    std::vector<SubprocessResult> results = cluster.Run();
    CHECK(results[1].exit_code == 128 + 9);
    for (int i : {0, 2}) {
      INFO(results[i].output);
      CHECK(results[i].exit_code == 3);
      // Far below the 60 s collective timeout: the closed connection is noticed.
      CHECK(results[i].elapsed_s < results[1].elapsed_s + 10);
      CHECK(results[i].output.find("worker:1 (" + cluster.address(1) + ")") != std::string::npos);
    }
  }
}

TEST_CASE("a worker that disagrees about a collective fails the job with exit 7",
          "[cluster][failures]") {
  // Either rank at fault: the frames of a pair travel both ways on the call the
  // lower rank opens, and the cause must reach the other worker either way.
  for (int faulty : {1, 0}) {
    INFO("faulty rank " << faulty);
    ProcessCluster cluster({kWorker, 2, false, {"--transport=grpc"}});
    cluster.AddArgs(faulty, {"--wrong_count"});
    std::vector<SubprocessResult> results = cluster.Run();
    const std::string both = results[0].output + results[1].output;
    INFO(both);
    CHECK((results[0].exit_code == 7 || results[1].exit_code == 7));
    for (const SubprocessResult& result : results) {
      CHECK(result.exit_code != 0);
      // The worker that found it says so; the other reports it as its peer's cause.
      CHECK(result.output.find("collective mismatch between") != std::string::npos);
    }
    // The first all-reduce of more than one element has 3 (world + 1) elements; the
    // faulty worker calls it with 2.
    CHECK(both.find("allreduce(float32 x 3, sum)") != std::string::npos);
    CHECK(both.find("allreduce(float32 x 2, sum)") != std::string::npos);
  }
}

TEST_CASE("workers with different clusters refuse each other with exit 2", "[cluster][failures]") {
  ProcessCluster cluster({kWorker, 2, false, {"--startup_timeout_s=20"}});
  // Task 1 believes there is a third worker.
  cluster.SetTfConfig(1, "{\"cluster\": {\"worker\": [\"" + cluster.address(0) + "\", \"" +
                             cluster.address(1) +
                             "\", \"127.0.0.1:1\"]}, \"task\": "
                             "{\"type\": \"worker\", \"index\": 1}}");
  std::vector<SubprocessResult> results = cluster.Run();
  for (int i = 0; i < 2; ++i) {
    INFO(results[i].output);
    CHECK(results[i].exit_code == 2);
    CHECK(results[i].elapsed_s < 10);
    CHECK(results[i].output.find("cluster mismatch") != std::string::npos);
    CHECK(results[i].output.find(",127.0.0.1:1]") != std::string::npos);
  }
}

TEST_CASE("a worker whose address is taken exits 2 naming it", "[cluster][failures]") {
  ProcessCluster cluster({kWorker, 2, false, {"--startup_timeout_s=5"}});
  // Both tasks claim the same index, so the second cannot listen on its address.
  cluster.SetTfConfig(1, cluster.tf_config(0));
  cluster.SetStartOrder({0, 1}, 0.5);
  std::vector<SubprocessResult> results = cluster.Run();
  INFO(results[1].output);
  CHECK(results[1].exit_code == 2);
  CHECK(results[1].output.find("cannot listen on " + cluster.address(0)) != std::string::npos);
}

}  // namespace
}  // namespace ringwork
