// Launcher with host discovery (elastic): the ring of the hosts listed at the
// start, and workers added on hosts that appear while the job runs.
#include <signal.h>

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "base/exit_code.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "runtime/config/localhost.h"
#include "runtime/config/tf_config.h"
#include "tools/launch/host_discovery.h"
#include "tools/launch/launcher.h"

namespace ringwork {

absl::StatusOr<HostPort> Launcher::AddressOn(const std::string& host, int ring_index) const {
  if (IsLoopbackHost(host)) {
    RW_ASSIGN_OR_RETURN(std::vector<int> ports, PickFreePorts(1));
    return HostPort{"127.0.0.1", ports[0]};
  }
  const int port = options_.port + ring_index;
  if (port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--port=", options_.port, ": task ", ring_index, " would need port ", port));
  }
  return HostPort{host, port};
}

absl::StatusOr<ClusterSpec> Launcher::SpecFromDiscoveredHosts() {
  if (!options_.elastic) {
    return absl::InvalidArgumentError("--host_discovery needs --elastic (train --min_workers)");
  }
  if (options_.evaluator) {
    return absl::InvalidArgumentError("--host_discovery does not place an --evaluator");
  }
  absl::StatusOr<std::vector<DiscoveredHost>> hosts =
      DiscoverHosts(options_.host_discovery, std::min(10.0, options_.discovery_interval_s + 5));
  if (!hosts.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--host_discovery at the start: ", hosts.status().message()));
  }
  ClusterSpec spec;
  std::vector<std::string> task_hosts;
  for (const DiscoveredHost& host : *hosts) {
    for (int slot = 0; slot < host.slots; ++slot) {
      const int index = static_cast<int>(task_hosts.size());
      if (options_.max_workers > 0 && index >= options_.max_workers) break;
      RW_ASSIGN_OR_RETURN(HostPort address, AddressOn(host.host, index));
      if (options_.chief && spec.chief.empty()) {
        spec.chief.push_back(address);
      } else {
        spec.worker.push_back(address);
      }
      task_hosts.push_back(host.host);
      ++slots_filled_[host.host];
    }
  }
  if (task_hosts.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("--host_discovery lists ", task_hosts.size(),
                     " slots at the start; an elastic job starts with at least 2 workers"));
  }
  for (const auto& [host, filled] : slots_filled_) {
    RW_LOG(INFO) << "host " << host << ": " << filled << " task" << (filled == 1 ? "" : "s");
  }
  voting_spec_ = spec;
  extras_.clear();
  const std::vector<TaskId> ids = AllTasks(spec);
  for (size_t i = 0; i < ids.size(); ++i) {
    Task task;
    task.id = ids[i];
    task.tag = absl::StrCat("[", ids[i].ToString(), "] ");
    task.host = task_hosts[i];
    tasks_.push_back(std::move(task));
  }
  next_discovery_ = Deadline::AfterSeconds(options_.discovery_interval_s);
  return spec;
}

int Launcher::RingTasksRunning() const {
  int running = 0;
  for (const Task& task : tasks_) {
    if (task.id.type != TaskType::kEvaluator && (!task.exited || task.restart_pending)) ++running;
  }
  return running;
}

absl::Status Launcher::StartExtra(const std::string& host) {
  const int ring_index =
      static_cast<int>(voting_spec_.chief.size() + voting_spec_.worker.size() + extras_.size());
  RW_ASSIGN_OR_RETURN(HostPort address, AddressOn(host, ring_index));
  extras_.push_back(address);
  ClusterSpec spec = voting_spec_;
  for (const HostPort& extra : extras_) spec.worker.push_back(extra);
  Task task;
  task.id = TaskId{TaskType::kWorker, static_cast<int>(spec.worker.size()) - 1};
  task.tag = absl::StrCat("[", task.id.ToString(), "] ");
  task.host = host;
  task.added = true;
  task.env["RINGWORK_VOTING_WORKERS"] = std::to_string(voting_spec_.worker.size());
  task.tf_config = ToTfConfigJson(ClusterConfig(spec, task.id, "launch"));
  tasks_.push_back(std::move(task));
  Task& added = tasks_.back();
  absl::Status spawned = Spawn(added, added.tf_config, 0);
  if (!spawned.ok()) {
    added.exited = true;
    added.exit_code = kInternal;
    return spawned;
  }
  RW_LOG(INFO) << "--host_discovery: started " << added.id.ToString() << " on " << host << " ("
               << address.ToString() << "); it joins the running job";
  return absl::OkStatus();
}

void Launcher::PollHosts() {
  next_discovery_ = Deadline::AfterSeconds(options_.discovery_interval_s);
  absl::StatusOr<std::vector<DiscoveredHost>> hosts =
      DiscoverHosts(options_.host_discovery, std::min(10.0, options_.discovery_interval_s + 5));
  if (!hosts.ok()) {
    // The hosts stay as they were (a discovery that fails now and then is no
    // host failure); said once per distinct error.
    if (last_discovery_error_ != hosts.status().message()) {
      last_discovery_error_ = std::string(hosts.status().message());
      RW_LOG(WARNING) << "--host_discovery: " << last_discovery_error_
                      << "; keeping the hosts as they were";
    }
    return;
  }
  last_discovery_error_.clear();
  std::set<std::string> listed;
  for (const DiscoveredHost& host : *hosts) listed.insert(host.host);
  // Hosts gone: their tasks are a failed host's.
  for (auto it = slots_filled_.begin(); it != slots_filled_.end();) {
    if (listed.count(it->first)) {
      ++it;
      continue;
    }
    RW_LOG(WARNING) << "--host_discovery: host " << it->first
                    << " is no longer listed; its tasks are stopped as failed (SIGKILL)";
    for (Task& task : tasks_) {
      if (task.host != it->first || task.host_gone) continue;
      task.host_gone = true;
      task.restart_pending = false;
      if (!task.exited) ::kill(-task.pid, SIGKILL);
    }
    it = slots_filled_.erase(it);
  }
  // The job ended (or is ending): nothing new starts.
  if (SignalReceived() || a_ring_task_succeeded_ || !RingTaskRuns()) return;
  for (const DiscoveredHost& host : *hosts) {
    int& filled = slots_filled_[host.host];
    while (filled < host.slots) {
      if (options_.max_workers > 0 && RingTasksRunning() >= options_.max_workers) {
        if (!warned_max_workers_) {
          RW_LOG(INFO) << "--host_discovery: " << options_.max_workers
                       << " ring tasks run (--max_workers); host " << host.host
                       << " gets workers when some leave";
          warned_max_workers_ = true;
        }
        return;
      }
      absl::Status started = StartExtra(host.host);
      ++filled;
      if (!started.ok()) {
        RW_LOG(ERROR) << "--host_discovery: cannot start a worker on " << host.host << ": "
                      << started.message();
      }
    }
  }
  warned_max_workers_ = false;
}

}  // namespace ringwork
