#include "testing/process_cluster.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>

#include "runtime/config/localhost.h"
#include "runtime/config/tf_config.h"

namespace ringwork {

ProcessCluster::ProcessCluster(Options options) : options_(std::move(options)) {
  absl::StatusOr<ClusterSpec> spec = LocalhostClusterSpec(options_.num_workers, options_.chief);
  if (!spec.ok()) {
    std::fprintf(stderr, "ProcessCluster: %s\n", std::string(spec.status().message()).c_str());
    std::abort();
  }
  spec_ = *spec;
  tasks_ = AllTasks(spec_);
  for (size_t i = 0; i < tasks_.size(); ++i) {
    tf_configs_.push_back(ToTfConfigJson(ClusterConfig(spec_, tasks_[i], "test")));
    order_.push_back(static_cast<int>(i));
  }
}

void ProcessCluster::SetStartOrder(std::vector<int> order, double gap_s) {
  order_ = std::move(order);
  gap_s_ = gap_s;
}

void ProcessCluster::AddArgs(int task, std::vector<std::string> args) {
  auto& list = extra_args_[task];
  list.insert(list.end(), args.begin(), args.end());
}

std::string ProcessCluster::address(int i) const {
  return spec_.Job(tasks_[i].type)[tasks_[i].index].ToString();
}

std::vector<SubprocessResult> ProcessCluster::Run() {
  std::vector<std::unique_ptr<Subprocess>> processes(tasks_.size());
  for (size_t n = 0; n < order_.size(); ++n) {
    const int i = order_[n];
    if (n > 0 && gap_s_ > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(gap_s_));
    }
    if (skipped_.count(i)) continue;
    Subprocess::Options options;
    options.env = options_.env;
    options.env["TF_CONFIG"] = tf_configs_[i];
    options.timeout_s = timeouts_.count(i) ? timeouts_.at(i) : options_.timeout_s;
    std::vector<std::string> argv = {options_.binary};
    argv.insert(argv.end(), options_.args.begin(), options_.args.end());
    auto extra = extra_args_.find(i);
    if (extra != extra_args_.end())
      argv.insert(argv.end(), extra->second.begin(), extra->second.end());
    processes[i] = std::make_unique<Subprocess>(Subprocess::Start(argv, options));
  }
  // Each on its own thread, so that no task blocks on a full output pipe.
  std::vector<SubprocessResult> results(tasks_.size());
  std::vector<std::thread> waiters;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (processes[i] == nullptr) continue;
    waiters.emplace_back([&, i] { results[i] = processes[i]->Wait(); });
  }
  for (auto& t : waiters) t.join();
  return results;
}

}  // namespace ringwork
