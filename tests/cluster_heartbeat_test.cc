// Failure detection on localhost clusters of real processes: a stopped worker
// (SIGSTOP: its sockets stay open, only heartbeats can tell) is found within the
// heartbeat budget; a slow step under the collective timeout trips nothing; a
// stalled collective is reported with the task that has not reached it.
#include <catch2/catch.hpp>
#include <regex>
#include <string>

#include "testing/process_cluster.h"

namespace ringwork {
namespace {

constexpr char kWorker[] = "tests/collective_check_worker";

TEST_CASE("a stopped worker is found by heartbeats within interval x misses + 1 s",
          "[cluster][heartbeat]") {
  for (const char* transport : {"--transport=auto", "--transport=grpc"}) {
    INFO(transport);
    ProcessCluster cluster({kWorker,
                            3,
                            false,
                            {transport, "--collective_timeout_s=120", "--heartbeat_interval_s=0.5",
                             "--heartbeat_misses=4"}});
    cluster.AddArgs(1, {"--stop_after=30"});
    cluster.SetTimeout(1, 30);  // Stopped: killed by the test harness at its deadline.
    std::vector<SubprocessResult> results = cluster.Run();
    CHECK(results[1].timed_out);
    for (int i : {0, 2}) {
      INFO(results[i].output);
      CHECK(results[i].exit_code == 3);
      CHECK(!results[i].timed_out);
      CHECK(results[i].elapsed_s < 25);  // Far below the 120 s collective timeout.
      const std::string line = "worker:1 (" + cluster.address(1) + ") stopped answering heartbeats";
      // Either this worker's heartbeats found it, or the first one to find it
      // told this one (its heartbeat reply carries its error).
      CHECK(results[i].output.find(line) != std::string::npos);
      std::smatch m;
      REQUIRE(
          std::regex_search(results[i].output, m,
                            std::regex("no reply for ([0-9.]+) s \\(4 missed at 0.5 s intervals; "
                                       "--heartbeat_interval_s, --heartbeat_misses\\)")));
      CHECK(std::stod(m[1]) <= 2.0 + 1.0);
      CHECK(std::regex_search(results[i].output, std::regex("at step -?[0-9]+")));
    }
  }
}

TEST_CASE("a slow step under the collective timeout trips no heartbeat, and is reported",
          "[cluster][heartbeat]") {
  // Heartbeat budget 1 s, collective timeout 60 s; worker 2 sleeps 3 s in a step.
  ProcessCluster cluster({kWorker,
                          3,
                          false,
                          {"--collective_timeout_s=60", "--heartbeat_interval_s=0.25",
                           "--heartbeat_misses=4", "--stall_warning_s=1"}});
  cluster.AddArgs(2, {"--pause_after=20", "--pause_ms=3000"});
  std::vector<SubprocessResult> results = cluster.Run();
  for (int i = 0; i < 3; ++i) {
    INFO(results[i].output);
    CHECK(results[i].exit_code == 0);
  }
  // The waiting workers say who has not reached the collective.
  const std::string stall = results[0].output + results[1].output;
  INFO(stall);
  CHECK(std::regex_search(stall, std::regex("stall: collective #[0-9]+ on worker:[01] .* has "
                                            "waited [0-9]+ s; not there yet: worker:2 \\(" +
                                            cluster.address(2) + "\\)")));
}

TEST_CASE("a hung worker that still answers heartbeats ends in the collective timeout",
          "[cluster][heartbeat]") {
  ProcessCluster cluster(
      {kWorker,
       2,
       false,
       {"--collective_timeout_s=3", "--heartbeat_interval_s=0.25", "--heartbeat_misses=4"}});
  cluster.AddArgs(1, {"--hang_after=10"});
  cluster.SetTimeout(1, 30);
  std::vector<SubprocessResult> results = cluster.Run();
  INFO(results[0].output);
  CHECK(results[0].exit_code == 4);
  CHECK(results[0].output.find("timed out after 3 s") != std::string::npos);
  CHECK(results[0].output.find("--collective_timeout_s (env RINGWORK_COLLECTIVE_TIMEOUT_S)") !=
        std::string::npos);
  CHECK(results[0].output.find("stopped answering heartbeats") == std::string::npos);
}

}  // namespace
}  // namespace ringwork
