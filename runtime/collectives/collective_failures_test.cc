// Fault injection on the in-memory transport: broken links, silent peers, killed
// ranks and mismatched calls end in clear errors within their bounds, and the first
// error is sticky.
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "runtime/collectives/communicator.h"
#include "runtime/collectives/expectations.h"
#include "runtime/transport/faulty_link.h"
#include "runtime/transport/in_memory_link.h"
#include "testing/rank_threads.h"

namespace ringwork {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string Text(const absl::Status& status) { return std::string(status.message()); }

InMemoryNetwork::LinkWrapper Fault(int self, int peer, FaultyLink::Fault fault, int frames_before) {
  return [=](int s, int p, std::unique_ptr<Link> link) -> std::unique_ptr<Link> {
    if (s != self || p != peer) return link;
    return std::make_unique<FaultyLink>(std::move(link), frames_before, fault);
  };
}

TEST_CASE("a broken link fails every rank, and the first error is sticky", "[failures]") {
  InMemoryNetwork network(3, Transport::Options(), 1 << 20,
                          Fault(1, 2, FaultyLink::Fault::kFailSends, 5));
  CollectiveOptions options;
  options.timeout_s = 10;
  std::vector<absl::Status> later(3);
  std::vector<double> later_seconds(3);
  auto results = RunOnRanks(3, [&](int rank) {
    Communicator comm(network.transport(rank), options);
    absl::Status st;
    std::vector<float> data(1000, 1.0f);
    for (int i = 0; i < 100 && st.ok(); ++i) {
      st = comm.AllReduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum);
    }
    const auto start = Clock::now();
    later[rank] = comm.Barrier();
    later_seconds[rank] = SecondsSince(start);
    return st;
  });
  for (int r = 0; r < 3; ++r) {
    INFO("rank " << r << ": " << Text(results[r]));
    CHECK_FALSE(results[r].ok());
    CHECK(absl::IsUnavailable(results[r]));
    // Later calls fail at once with the same first error.
    CHECK(later[r] == results[r]);
    CHECK(later_seconds[r] < 0.05);
  }
  CHECK(Text(results[1]).find("injected fault: the link to rank 2 broke") != std::string::npos);
  CHECK(Text(results[1]).find("allreduce(float32 x 1000, sum)") != std::string::npos);
  // The root cause first, then who passed it on.
  const std::string passed_on = Text(results[2]);
  INFO(passed_on);
  CHECK(passed_on.find("injected fault") <
        passed_on.find("(reported by rank 1, which closed its connection"));
  CHECK(passed_on.find("(reported by rank 1, which closed its connection") != std::string::npos);
}

TEST_CASE("a silent peer ends in a timeout that names it and the flag", "[failures]") {
  // With three ranks recursive doubling pairs ranks 0 and 1 first; rank 1 hands
  // the result back to rank 0 at the end, and that frame is swallowed.
  InMemoryNetwork network(3, Transport::Options(), 1 << 20,
                          Fault(1, 0, FaultyLink::Fault::kSwallowSends, 0));
  CollectiveOptions options;
  options.timeout_s = 0.5;
  std::vector<double> seconds(3);
  auto results = RunOnRanks(3, [&](int rank) {
    Communicator comm(network.transport(rank), options);
    std::vector<int32_t> data(10, rank);
    const auto start = Clock::now();
    absl::Status st = comm.AllReduce(data.data(), data.size(), DataType::kInt32, ReduceOp::kMax);
    seconds[rank] = SecondsSince(start);
    return st;
  });
  // Rank 0 waits for the swallowed frame and rank 1 for its completion; whichever
  // deadline passes first reports the timeout, naming the flag, and the other
  // rank learns it from the closing link.
  const std::string both = Text(results[0]) + Text(results[1]);
  INFO(both);
  CHECK((absl::IsDeadlineExceeded(results[0]) || absl::IsDeadlineExceeded(results[1])));
  CHECK(both.find("allreduce(int32 x 10, max) (collective #0) on rank ") != std::string::npos);
  CHECK(both.find("timed out after 0.5 s: timed out waiting to") != std::string::npos);
  CHECK(both.find("set --collective_timeout_s (env RINGWORK_COLLECTIVE_TIMEOUT_S) to wait "
                  "longer") != std::string::npos);
  for (int r = 0; r < 2; ++r) {
    CHECK(seconds[r] >= 0.45);
    CHECK(seconds[r] < 2.0);
  }
  // Rank 2's part (its exchange with rank 1) completed.
  CHECK(results[2].ok());
}

TEST_CASE("a killed rank makes every other rank fail promptly, naming it", "[failures]") {
  InMemoryNetwork network(4);
  CollectiveOptions options;
  options.timeout_s = 30;
  std::vector<double> seconds_after_kill(4);
  std::atomic<bool> killed{false};
  Clock::time_point kill_time;
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    kill_time = Clock::now();
    killed = true;
    network.Kill(2);
  });
  auto results = RunOnRanks(4, [&](int rank) {
    Communicator comm(network.transport(rank), options);
    std::vector<float> data(4096, 1.0f);
    absl::Status st;
    while (st.ok()) {
      st = comm.AllReduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum);
    }
    while (!killed) std::this_thread::yield();
    seconds_after_kill[rank] = SecondsSince(kill_time);
    return st;
  });
  killer.join();
  for (int r : {0, 1, 3}) {
    INFO("rank " << r << ": " << Text(results[r]));
    // The killed rank's own cause (ABORTED), or its closed connection: exit 3 both.
    CHECK((absl::IsUnavailable(results[r]) || absl::IsAborted(results[r])));
    CHECK(seconds_after_kill[r] < 1.0);
  }
  CHECK(Text(results[1]).find("rank 2") != std::string::npos);
  CHECK(Text(results[2]).find("rank 2 killed") != std::string::npos);
}

TEST_CASE("mismatched calls fail with exit-7 errors showing both sides", "[failures]") {
  SECTION("different counts") {
    InMemoryNetwork network(2);
    auto results = RunOnRanks(2, [&](int rank) {
      Communicator comm(network.transport(rank), CollectiveOptions());
      std::vector<float> data(12);
      return comm.AllReduce(data.data(), rank == 0 ? 12 : 10, DataType::kFloat32, ReduceOp::kSum);
    });
    for (int r = 0; r < 2; ++r) {
      INFO(Text(results[r]));
      CHECK(absl::IsFailedPrecondition(results[r]));
    }
    // Whichever rank notices first names both calls; the other reports it too.
    for (int r = 0; r < 2; ++r) {
      INFO(Text(results[r]));
      CHECK(Text(results[r]).find("collective mismatch between") != std::string::npos);
      CHECK(Text(results[r]).find("allreduce(float32 x 12, sum)") != std::string::npos);
      CHECK(Text(results[r]).find("allreduce(float32 x 10, sum)") != std::string::npos);
    }
  }
  SECTION("different collectives") {
    InMemoryNetwork network(2);
    auto results = RunOnRanks(2, [&](int rank) {
      Communicator comm(network.transport(rank), CollectiveOptions());
      if (rank == 0) return comm.Barrier();
      std::vector<int64_t> data(3);
      return comm.AllReduce(data.data(), 3, DataType::kInt64, ReduceOp::kSum);
    });
    for (int r = 0; r < 2; ++r) {
      INFO(Text(results[r]));
      CHECK(absl::IsFailedPrecondition(results[r]));
    }
    const std::string both = Text(results[0]) + Text(results[1]);
    CHECK(both.find("barrier") != std::string::npos);
    CHECK(both.find("allreduce(int64 x 3, sum)") != std::string::npos);
  }
  SECTION("different segment sizes") {
    InMemoryNetwork network(2);
    auto results = RunOnRanks(2, [&](int rank) {
      CollectiveOptions options;
      options.segment_bytes = rank == 0 ? 256 : 512;
      options.allreduce_algorithm = AllReduceAlgorithm::kRing;
      Communicator comm(network.transport(rank), options);
      std::vector<float> data(1000);
      return comm.AllReduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum);
    });
    for (int r = 0; r < 2; ++r) CHECK(absl::IsFailedPrecondition(results[r]));
    CHECK((Text(results[0]) + Text(results[1])).find("same collective options") !=
          std::string::npos);
  }
}

TEST_CASE("a bad broadcast root is refused and fails the group", "[failures]") {
  InMemoryNetwork network(2);
  auto results = RunOnRanks(2, [&](int rank) {
    CollectiveOptions options;
    options.timeout_s = 5;
    Communicator comm(network.transport(rank), options);
    std::vector<float> data(4);
    return comm.Broadcast(data.data(), 4, DataType::kFloat32, rank == 0 ? 7 : 0);
  });
  CHECK(absl::IsInvalidArgument(results[0]));
  CHECK(Text(results[0]).find("broadcast root 7 is not a rank (world size 2)") !=
        std::string::npos);
  CHECK_FALSE(results[1].ok());
}

}  // namespace
}  // namespace ringwork
