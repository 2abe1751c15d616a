// The hosts an elastic job may use now, as a user's command lists them (Horovod's
// --host-discovery-script): one host per line, optionally with its slots
// ("node7" or "node7:4"); blank lines and lines from '#' on are ignored.
//
//   absl::StatusOr<std::vector<DiscoveredHost>> hosts =
//       DiscoverHosts("cat /etc/ringwork/hosts", /*timeout_s=*/10);
//   // {{"node7", 4}, {"10.0.0.3", 1}}
//
// And how launch runs a task on a host: locally when the host is this machine
// (localhost, 127.x) and no remote shell is given, else through the remote shell
// (`ssh -o BatchMode=yes`, or any command taking HOST and a shell command line,
// as mpirun's plm_rsh_agent).
#ifndef RINGWORK_TOOLS_LAUNCH_HOST_DISCOVERY_H_
#define RINGWORK_TOOLS_LAUNCH_HOST_DISCOVERY_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ringwork {

// What reaches a host that is not this one unless --remote_shell says otherwise.
// BatchMode: no prompt (a host that wants a password fails, exit 255);
// ConnectTimeout: a host that does not answer fails within 10 s.
inline constexpr char kDefaultRemoteShell[] = "ssh -o BatchMode=yes -o ConnectTimeout=10";
// A remote task's first output line: its pid there ("RINGWORK_REMOTE_PID=123").
inline constexpr char kRemotePidPrefix[] = "RINGWORK_REMOTE_PID=";

struct DiscoveredHost {
  std::string host;
  int slots = 1;
  bool operator==(const DiscoveredHost& o) const { return host == o.host && slots == o.slots; }
};

// Runs `command` with /bin/sh, killed after `timeout_s`. UNAVAILABLE when it
// fails or times out (the caller keeps the hosts it had), INVALID_ARGUMENT for a
// line that is no host (naming it), or a host listed twice.
absl::StatusOr<std::vector<DiscoveredHost>> DiscoverHosts(const std::string& command,
                                                          double timeout_s);
// The parsing alone (tests, launch --hosts). An error names the line as
// `where` and its number ("host discovery, line 3").
absl::StatusOr<std::vector<DiscoveredHost>> ParseHostList(
    absl::string_view text, absl::string_view where = "host discovery, line ");

// localhost, 127.0.0.0/8, ::1: launch may start the task itself.
bool IsLoopbackHost(absl::string_view host);

// A POSIX shell word for `text` ('...' with every ' escaped).
std::string ShellQuote(absl::string_view text);
// "cd 'DIR' || exit 2; command -v 'PROGRAM' ... || exit 2; sh -c 'echo
// RINGWORK_REMOTE_PID=$$; exec "$@"' sh env 'K=V'... 'PROGRAM' 'ARG'...; exit $?":
// what a remote shell runs (the environment a remote host does not share travels
// on the command line; the pid line lets launch signal the task there; the exit
// code is the program's, 128 + N when signal N ended it, and 2 with a message
// naming the host when the directory or the program is not there).
std::string RemoteCommandLine(const std::string& directory,
                              const std::map<std::string, std::string>& env,
                              const std::vector<std::string>& command);

}  // namespace ringwork

#endif  // RINGWORK_TOOLS_LAUNCH_HOST_DISCOVERY_H_
