#include "testing/local_cluster.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "runtime/config/localhost.h"

namespace ringwork {

RuntimeOptions LocalCluster::TestRuntimeOptions() {
  RuntimeOptions options;
  options.rendezvous.startup_timeout_s = 60;
  options.first_step_timeout_s = 60;
  options.collectives.timeout_s = 60;
  options.shutdown_timeout_s = 5;
  (void)options.Finish();
  return options;
}

void LocalCluster::Worker::Crash() {
  runtime->transport()->Abort(
      absl::AbortedError(absl::StrCat("worker rank ", rank, " crashed (LocalCluster::Crash)")));
}

std::vector<absl::Status> LocalCluster::Run(const Options& options,
                                            const std::function<absl::Status(Worker&)>& fn) {
  ClusterSpec spec;
  auto host = [&](size_t task) {
    return task < options.hosts.size() ? options.hosts[task] : std::string("127.0.0.1");
  };
  if (options.chief) spec.chief.push_back(HostPort{host(0), 0});
  for (int i = 0; i < options.num_workers; ++i) {
    spec.worker.push_back(HostPort{host(spec.chief.size() + static_cast<size_t>(i)), 0});
  }
  const std::vector<TaskId> tasks = AllTasks(spec);
  const int n = static_cast<int>(tasks.size());
  std::vector<absl::Status> results(n);
  // Listen on port 0 everywhere, then tell every worker the ports.
  std::vector<std::unique_ptr<WorkerRuntime>> runtimes(n);
  for (int i = 0; i < n; ++i) {
    absl::StatusOr<std::unique_ptr<WorkerRuntime>> runtime =
        WorkerRuntime::Listen(ClusterConfig(spec, tasks[i], "LocalCluster"), options.runtime);
    if (!runtime.ok()) {
      results.assign(n, runtime.status());
      return results;
    }
    runtimes[i] = std::move(*runtime);
  }
  for (auto& runtime : runtimes) {
    for (int j = 0; j < n; ++j)
      runtime->SetAddress(tasks[j], {host(static_cast<size_t>(j)), runtimes[j]->bound_port()});
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      absl::Status status = runtimes[i]->Connect();
      if (status.ok()) {
        MultiWorkerMirroredStrategy strategy(runtimes[i].get(), options.strategy);
        Worker worker{runtimes[i]->config().rank(), runtimes[i].get(), &strategy};
        status = fn(worker);
      }
      results[i] = status;
      (void)runtimes[i]->Shutdown();
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

}  // namespace ringwork
