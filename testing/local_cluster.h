// Runs your distributed code on N workers inside one test, each a real worker:
// its own gRPC server on 127.0.0.1 (port 0), real rendezvous, real links (shared
// memory between them, or gRPC with `runtime.transport_kind = "grpc"`). One thread
// per worker runs your function; each returns a status for the test to check, so
// it works the same under GoogleTest and Catch2.
//
//   LocalCluster::Options options;
//   options.num_workers = 3;
//   std::vector<absl::Status> results = LocalCluster::Run(options, [](LocalCluster::Worker& w) {
//     auto scope = w.strategy->scope();
//     Sequential model;  ...  return model.Fit(data, fit).status();
//   });
//   for (const absl::Status& s : results) EXPECT_TRUE(s.ok()) << s;   // or CHECK(s.ok())
//
// To test failures, a worker can call w.Crash(): its links close as if the process
// died, and the other workers' pending and later collectives fail (exit code 3's
// status) instead of hanging. For real processes, see ProcessCluster.
#ifndef RINGWORK_TESTING_LOCAL_CLUSTER_H_
#define RINGWORK_TESTING_LOCAL_CLUSTER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "runtime/worker_runtime.h"
#include "strategy/multi_worker_mirrored_strategy.h"

namespace ringwork {

class LocalCluster {
 public:
  struct Options {
    int num_workers = 2;
    bool chief = false;  // Adds a chief task (rank 0) before the workers.
    // Per task (rank order), the address it listens on; missing ones: 127.0.0.1.
    std::vector<std::string> hosts;
    // Defaults suited to tests: 60 s to start, 60 s per collective.
    RuntimeOptions runtime = TestRuntimeOptions();
    StrategyOptions strategy;
  };

  struct Worker {
    int rank = 0;                                     // 0 is the chief.
    WorkerRuntime* runtime = nullptr;                 // Not owned.
    MultiWorkerMirroredStrategy* strategy = nullptr;  // Not owned.
    Communicator* communicator() { return runtime->communicator(); }
    // Simulates this worker's death: closes its links; its peers see it gone.
    void Crash();
  };

  // Starts every worker, runs `fn` on each (one thread each), shuts them down.
  // Returns each worker's status (a startup failure is returned for every worker).
  static std::vector<absl::Status> Run(const Options& options,
                                       const std::function<absl::Status(Worker&)>& fn);

  static RuntimeOptions TestRuntimeOptions();
};

}  // namespace ringwork

#endif  // RINGWORK_TESTING_LOCAL_CLUSTER_H_
