#include "runtime/config/localhost.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace ringwork {

absl::StatusOr<std::vector<int>> PickFreePorts(int count, const std::string& host) {
  std::vector<int> fds;
  std::vector<int> ports;
  absl::Status status;
  for (int i = 0; i < count && status.ok(); ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      status = absl::UnavailableError(absl::StrCat("socket(): ", std::strerror(errno)));
      break;
    }
    fds.push_back(fd);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = 0;
    if (::inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) {
      status = absl::InvalidArgumentError(absl::StrCat("\"", host, "\" is not an IPv4 address"));
      break;
    }
    socklen_t length = sizeof(address);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      status = absl::UnavailableError(
          absl::StrCat("cannot bind a free port on ", host, ": ", std::strerror(errno)));
      break;
    }
    ports.push_back(ntohs(address.sin_port));
  }
  for (int fd : fds) ::close(fd);
  if (!status.ok()) return status;
  return ports;
}

absl::StatusOr<ClusterSpec> LocalhostClusterSpec(int num_workers, bool with_chief,
                                                 bool with_evaluator) {
  if (num_workers < 0 || num_workers > 1024 || (num_workers == 0 && !with_chief)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--num_workers=", num_workers, ": expected 1..1024 workers (or 0 with --chief)"));
  }
  const int total = num_workers + (with_chief ? 1 : 0) + (with_evaluator ? 1 : 0);
  absl::StatusOr<std::vector<int>> ports = PickFreePorts(total);
  if (!ports.ok()) return ports.status();
  ClusterSpec spec;
  int next = 0;
  auto address = [&]() { return HostPort{"127.0.0.1", (*ports)[next++]}; };
  if (with_chief) spec.chief.push_back(address());
  for (int i = 0; i < num_workers; ++i) spec.worker.push_back(address());
  if (with_evaluator) spec.evaluator.push_back(address());
  return spec;
}

std::vector<TaskId> AllTasks(const ClusterSpec& spec) {
  std::vector<TaskId> tasks;
  for (TaskType type : {TaskType::kChief, TaskType::kWorker, TaskType::kEvaluator}) {
    for (size_t i = 0; i < spec.Job(type).size(); ++i) {
      tasks.push_back(TaskId{type, static_cast<int>(i)});
    }
  }
  return tasks;
}

}  // namespace ringwork
