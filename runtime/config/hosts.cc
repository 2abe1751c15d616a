#include "runtime/config/hosts.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "runtime/config/host_port.h"

namespace ringwork {

absl::StatusOr<ClusterSpec> HostsClusterSpec(const std::vector<std::string>& hosts, int port,
                                             int workers_per_host) {
  if (hosts.empty()) return absl::InvalidArgumentError("hosts: no host given");
  if (workers_per_host < 1 || workers_per_host > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("--workers_per_host=", workers_per_host, ": expected 1..1024"));
  }
  if (port < 1 || port + workers_per_host - 1 > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("--port=", port, ": ports ", port, "..",
                                                   port + workers_per_host - 1,
                                                   " must lie in 1..65535"));
  }
  ClusterSpec spec;
  std::set<std::string> seen;
  for (size_t h = 0; h < hosts.size(); ++h) {
    const std::string where = absl::StrCat("hosts[", h, "]");
    // Checked as a TF_CONFIG address is: the host with a port.
    absl::StatusOr<HostPort> first = ParseHostPort(absl::StrCat(hosts[h], ":", port), where);
    if (!first.ok() || hosts[h].find(':') != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": \"", hosts[h], "\" is not a host name or address",
                       first.ok() ? " (give the port with --port)" : ""));
    }
    if (!seen.insert(first->host).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": \"", hosts[h], "\" is named twice (use --workers_per_host)"));
    }
    for (int k = 0; k < workers_per_host; ++k) {
      spec.worker.push_back(HostPort{first->host, port + k});
    }
  }
  return spec;
}

}  // namespace ringwork
