// Over gRPC, after a small frame delivered to a waiting collective, a worker does
// not post its next Read until a receive wants it, or until its loop thread takes
// the queue back after the collectives (runtime/transport/grpc/grpc_link.h:
// chttp2's WINDOW_UPDATE then leaves after the worker's own frame). This covers
// what that must not break: frames a peer sends before their receives are posted
// (40 MiB, more than gRPC's window) arrive whole and in order; an idle worker
// reads the frames a peer sent before the peer shut down (a reset stream would drop
// them); an orderly shutdown sees each peer's end of stream at once.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "testing/local_cluster.h"

namespace ringwork {
namespace {

using Clock = std::chrono::steady_clock;

float Pattern(size_t i) { return static_cast<float>(i % 100003); }

absl::Status CheckPattern(const std::vector<float>& data) {
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i] != Pattern(i)) {
      return absl::InternalError(absl::StrCat("broadcast element ", i, " is ", data[i]));
    }
  }
  return absl::OkStatus();
}

// A small all-reduce: afterwards both workers owe their next Read.
absl::Status SmallAllReduce(Communicator* comm, int rank, int round) {
  int64_t value = (rank + 1) * (round + 1);
  RW_RETURN_IF_ERROR(comm->AllReduce(&value, 1, DataType::kInt64, ReduceOp::kSum));
  if (value != 3 * (round + 1)) {
    return absl::InternalError(absl::StrCat("round ", round, ": sum ", value));
  }
  return absl::OkStatus();
}

void CheckAllOk(const std::vector<absl::Status>& results) {
  for (size_t i = 0; i < results.size(); ++i) {
    INFO("worker " << i << ": " << results[i].message());
    CHECK(results[i].ok());
  }
}

TEST_CASE("over gRPC, frames sent ahead of their receives arrive in order; shutdown stays prompt",
          "[grpc]") {
  LocalCluster::Options options;
  options.num_workers = 2;
  options.runtime.transport_kind = "grpc";
  // Far above what an orderly close takes: a close that waits for it is the bug.
  options.runtime.shutdown_timeout_s = 20;
  constexpr size_t kCount = (40 << 20) / sizeof(float);  // 40 frames of 1 MiB: past the window.
  constexpr int kSmallRounds = 200;
  std::atomic<int64_t> last_return_us{0};
  const std::vector<absl::Status> results =
      LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
        Communicator* comm = w.communicator();
        RW_RETURN_IF_ERROR(SmallAllReduce(comm, w.rank, 0));
        std::vector<float> data(kCount, 0.f);
        if (w.rank == 1) {
          for (size_t i = 0; i < kCount; ++i) data[i] = Pattern(i);
        } else {
          // Rank 1's frames arrive while no receive waits for them.
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
        }
        RW_RETURN_IF_ERROR(comm->Broadcast(data.data(), kCount, DataType::kFloat32, /*root=*/1));
        RW_RETURN_IF_ERROR(CheckPattern(data));
        // Small frames back to back: each Read is posted only when wanted.
        for (int round = 1; round <= kSmallRounds; ++round) {
          RW_RETURN_IF_ERROR(SmallAllReduce(comm, w.rank, round));
        }
        const int64_t now_us =
            std::chrono::duration_cast<std::chrono::microseconds>(Clock::now().time_since_epoch())
                .count();
        int64_t seen = last_return_us.load();
        while (seen < now_us && !last_return_us.compare_exchange_weak(seen, now_us)) {
        }
        return absl::OkStatus();
      });
  const int64_t end_us =
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now().time_since_epoch())
          .count();
  CheckAllOk(results);
  // Both shut down after their last collective: each owes a Read then.
  const double shutdown_s = static_cast<double>(end_us - last_return_us.load()) / 1e6;
  INFO("shutdown took " << shutdown_s << " s");
  CHECK(shutdown_s < 10);
}

TEST_CASE("over gRPC, an idle worker reads the frames its peer sent before shutting down",
          "[grpc]") {
  LocalCluster::Options options;
  options.num_workers = 2;
  options.runtime.transport_kind = "grpc";
  // Rank 1 waits this long for rank 0 to end its stream, then cancels its calls:
  // rank 0 receives well after that.
  options.runtime.shutdown_timeout_s = 1;
  constexpr size_t kCount = 1000;
  constexpr int kBroadcasts = 3;
  CheckAllOk(LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
    Communicator* comm = w.communicator();
    // In step: the last frames reach collectives that wait, so Reads are owed.
    for (int round = 0; round < 20; ++round)
      RW_RETURN_IF_ERROR(SmallAllReduce(comm, w.rank, round));
    std::vector<float> data(kCount, 0.f);
    if (w.rank == 1) {
      for (size_t i = 0; i < kCount; ++i) data[i] = Pattern(i);
      // Each send completes once in the kernel; then rank 1 shuts down.
      for (int b = 0; b < kBroadcasts; ++b) {
        RW_RETURN_IF_ERROR(comm->Broadcast(data.data(), kCount, DataType::kFloat32, /*root=*/1));
      }
      return absl::OkStatus();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    for (int b = 0; b < kBroadcasts; ++b) {
      std::fill(data.begin(), data.end(), 0.f);
      RW_RETURN_IF_ERROR(comm->Broadcast(data.data(), kCount, DataType::kFloat32, /*root=*/1));
      RW_RETURN_IF_ERROR(CheckPattern(data));
    }
    return absl::OkStatus();
  }));
}

}  // namespace
}  // namespace ringwork
