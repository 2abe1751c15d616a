// Runs a binary as every task of a localhost cluster, one process per task, each
// with its own TF_CONFIG, for tests of real multi-process behaviour: start order,
// missing or misbehaving tasks, exit codes and messages.
//
//   ProcessCluster cluster({.binary = "tests/collective_check_worker", .num_workers = 3});
//   cluster.SetStartOrder({2, 1, 0}, /*gap_s=*/0.3);     // reverse order
//   cluster.AddArgs(1, {"--die_after=10"});               // task 1 misbehaves
//   std::vector<SubprocessResult> results = cluster.Run();
//   CHECK(results[0].exit_code == 3);
#ifndef RINGWORK_TESTING_PROCESS_CLUSTER_H_
#define RINGWORK_TESTING_PROCESS_CLUSTER_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/config/cluster_config.h"
#include "testing/subprocess.h"

namespace ringwork {

class ProcessCluster {
 public:
  struct Options {
    std::string binary;
    int num_workers = 2;
    bool chief = false;
    std::vector<std::string> args;           // For every task.
    std::map<std::string, std::string> env;  // For every task.
    double timeout_s = 120;                  // Per process.
  };

  explicit ProcessCluster(Options options);

  // Task i is the i-th ring member (chief first). By default all start at once.
  void SetStartOrder(std::vector<int> order, double gap_s);
  void AddArgs(int task, std::vector<std::string> args);
  // A shorter (or longer) deadline for one task: e.g. a task that stops itself,
  // which the test expects to be killed at its deadline.
  void SetTimeout(int task, double timeout_s) { timeouts_[task] = timeout_s; }
  // The task is in every TF_CONFIG but never started.
  void Skip(int task) { skipped_.insert(task); }
  // Replaces a task's TF_CONFIG (to give it a different view of the cluster).
  void SetTfConfig(int task, std::string tf_config) { tf_configs_[task] = std::move(tf_config); }

  const ClusterSpec& spec() const { return spec_; }
  int size() const { return static_cast<int>(tasks_.size()); }
  const TaskId& task(int i) const { return tasks_[i]; }
  std::string address(int i) const;
  std::string tf_config(int i) const { return tf_configs_[i]; }

  // Starts the tasks (in order, with gaps) and waits for all; skipped tasks have
  // exit_code -1.
  std::vector<SubprocessResult> Run();

 private:
  Options options_;
  ClusterSpec spec_;
  std::vector<TaskId> tasks_;
  std::vector<std::string> tf_configs_;
  std::vector<int> order_;
  double gap_s_ = 0;
  std::map<int, std::vector<std::string>> extra_args_;
  std::set<int> skipped_;
  std::map<int, double> timeouts_;
};

}  // namespace ringwork

#endif  // RINGWORK_TESTING_PROCESS_CLUSTER_H_
