// A cluster over hosts given by name, for `tfconfig hosts` (and a launcher that
// starts tasks on them): `workers_per_host` workers on each host, in the order of
// the hosts, on ports port, port + 1, ... of each.
//
//   absl::StatusOr<ClusterSpec> spec = HostsClusterSpec({"node1", "node2"}, 2222, 2);
//   // worker 0 node1:2222, 1 node1:2223, 2 node2:2222, 3 node2:2223
//
// Host names are checked as TF_CONFIG's addresses are (runtime/config/host_port.h);
// a host named twice, no host, a port range past 65535 or a count below 1 is
// INVALID_ARGUMENT naming the flag.
#ifndef RINGWORK_RUNTIME_CONFIG_HOSTS_H_
#define RINGWORK_RUNTIME_CONFIG_HOSTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/config/cluster_config.h"

namespace ringwork {

absl::StatusOr<ClusterSpec> HostsClusterSpec(const std::vector<std::string>& hosts, int port,
                                             int workers_per_host);

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_CONFIG_HOSTS_H_
