// Testing distributed code with GoogleTest: testing::LocalCluster runs the function
// on N real workers (gRPC on 127.0.0.1:0) in this process.
#include <gtest/gtest.h>

#include "ringwork.h"
#include "testing/local_cluster.h"

namespace {

using ringwork::LocalCluster;

TEST(LocalClusterWithGoogleTest, EveryWorkerSeesTheSameSum) {
  LocalCluster::Options options;
  options.num_workers = 3;
  std::vector<absl::Status> results = LocalCluster::Run(options, [](LocalCluster::Worker& w) {
    double x = w.rank + 1;  // 1, 2, 3
    absl::Status st = w.strategy->Reduce(ringwork::ReduceOp::kSum, &x, 1);
    if (st.ok() && x != 6) st = absl::InternalError("wrong sum");
    return st;
  });
  for (const absl::Status& s : results) EXPECT_TRUE(s.ok()) << s;
}

TEST(LocalClusterWithGoogleTest, ACrashedWorkerFailsItsPeersInsteadOfHanging) {
  LocalCluster::Options options;
  options.num_workers = 2;
  std::vector<absl::Status> results = LocalCluster::Run(options, [](LocalCluster::Worker& w) {
    if (w.rank == 1) {
      w.Crash();
      return absl::OkStatus();
    }
    double x = 1;
    return w.strategy->Reduce(ringwork::ReduceOp::kSum, &x, 1);
  });
  // A peer failure (exit 3): the closed link, or the crashed worker's own error
  // carried by its heartbeat reply, whichever arrives first.
  EXPECT_EQ(ringwork::ExitCodeFor(results[0]), ringwork::kPeerFailure) << results[0];
}

}  // namespace
