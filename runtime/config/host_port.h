// A task's network address, "host:port", parsed and validated.
//
//   absl::StatusOr<HostPort> a = ParseHostPort("[::1]:2222", "TF_CONFIG.cluster.worker[0]");
//   a->host == "::1"; a->port == 2222; a->ToString() == "[::1]:2222";
//
// Accepted: "name:port", "1.2.3.4:port", "[v6addr]:port". Refused with a message that
// names `json_path` and the value: a missing or non-numeric port, a port outside
// 1..65535 (0 only when `allow_port_zero`), an IPv6 address without brackets, a URL
// scheme, an empty host, or characters that no host name can contain.
#ifndef RINGWORK_RUNTIME_CONFIG_HOST_PORT_H_
#define RINGWORK_RUNTIME_CONFIG_HOST_PORT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ringwork {

struct HostPort {
  std::string host;  // Without brackets, lower-cased: "worker-0.svc", "::1".
  int port = 0;      // 0 only for in-process tests: "pick a free port".

  bool is_ipv6() const { return host.find(':') != std::string::npos; }
  bool is_loopback() const;
  // "host:port", with brackets around IPv6 hosts.
  std::string ToString() const;
  bool operator==(const HostPort& other) const { return host == other.host && port == other.port; }
  bool operator!=(const HostPort& other) const { return !(*this == other); }
};

absl::StatusOr<HostPort> ParseHostPort(absl::string_view text, absl::string_view json_path,
                                       bool allow_port_zero = false);

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_CONFIG_HOST_PORT_H_
