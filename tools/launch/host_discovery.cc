#include "tools/launch/host_discovery.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/deadline.h"

namespace ringwork {

absl::StatusOr<std::vector<DiscoveredHost>> ParseHostList(absl::string_view text,
                                                          absl::string_view where) {
  std::vector<DiscoveredHost> hosts;
  std::set<std::string> seen;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (const size_t hash = line.find('#'); hash != absl::string_view::npos) {
      line = line.substr(0, hash);
    }
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    DiscoveredHost host;
    const size_t colon = line.rfind(':');
    // "host:slots"; an IPv6 address alone, or in brackets with slots ("[::1]:2").
    const bool bracketed = line.front() == '[';
    const bool bare_ipv6 = !bracketed && line.find(':') != colon;
    const bool has_slots =
        colon != absl::string_view::npos && !bare_ipv6 && (!bracketed || line[colon - 1] == ']');
    absl::string_view name = has_slots ? line.substr(0, colon) : line;
    if (bracketed) {
      if (name.size() < 3 || name.back() != ']') {
        return absl::InvalidArgumentError(
            absl::StrCat(where, line_number, " (\"", line, "\"): expected [IPV6]:SLOTS"));
      }
      name = name.substr(1, name.size() - 2);
    }
    host.host = std::string(name);
    if (has_slots && (!absl::SimpleAtoi(line.substr(colon + 1), &host.slots) || host.slots < 1 ||
                      host.slots > 1024)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, line_number, " (\"", line, "\"): expected HOST or HOST:SLOTS"));
    }
    // (A leading '-' would be an option to ssh.)
    if (host.host.empty() || host.host.front() == '-' ||
        host.host.find_first_of(" \t'\"`$\\;&|<>[]") != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, line_number, " (\"", line, "\"): not a host name or address"));
    }
    if (!seen.insert(host.host).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, line_number, ": host ", host.host, " is listed twice"));
    }
    hosts.push_back(std::move(host));
  }
  return hosts;
}

absl::StatusOr<std::vector<DiscoveredHost>> DiscoverHosts(const std::string& command,
                                                          double timeout_s) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  const pid_t pid = ::fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(out[1], STDOUT_FILENO);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  std::string text;
  const Deadline deadline = Deadline::AfterSeconds(timeout_s);
  bool timed_out = false, exited = false, eof = false;
  int status = 0;
  // Until the command exited and its output so far is read (a child it left in
  // the background may keep the output open), or the deadline.
  while (true) {
    if (!exited && ::waitpid(pid, &status, WNOHANG) == pid) exited = true;
    pollfd p{out[0], POLLIN, 0};
    const int ready = eof ? 0 : ::poll(&p, 1, exited ? 0 : 20);
    if (ready > 0) {
      char buffer[4096];
      const ssize_t n = ::read(out[0], buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) eof = true;
      if (n > 0) text.append(buffer, static_cast<size_t>(n));
      if (text.size() > (1 << 20)) break;  // No host list is this long.
    }
    if (exited && ready <= 0) break;
    if (deadline.Expired()) {
      timed_out = !exited;
      break;
    }
    if (eof && !exited) ::usleep(20000);
  }
  ::close(out[0]);
  ::kill(-pid, SIGKILL);  // Anything it left behind.
  while (!exited && ::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return absl::UnavailableError(
        absl::StrCat("host discovery (", command, ") took over ", timeout_s, " s"));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::UnavailableError(absl::StrCat("host discovery (", command, ") failed (",
                                               WIFEXITED(status)
                                                   ? absl::StrCat("exit ", WEXITSTATUS(status))
                                                   : absl::StrCat("signal ", WTERMSIG(status)),
                                               ")"));
  }
  return ParseHostList(text);
}

bool IsLoopbackHost(absl::string_view host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || absl::StartsWith(host, "127.");
}

std::string ShellQuote(absl::string_view text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

std::string RemoteCommandLine(const std::string& directory,
                              const std::map<std::string, std::string>& env,
                              const std::vector<std::string>& command) {
  // The program runs in the foreground of the remote shell (so that it keeps
  // SIGINT), as an inner sh that says its pid and execs it; the remote shell
  // then exits with its status, 128 + N when signal N ended it, which ssh passes
  // back (a program that is the session itself ending by a signal makes ssh
  // exit 255). `exit $?` keeps the shell from exec'ing its last command.
  const std::string program = command.empty() ? "" : ShellQuote(command[0]);
  std::string line = absl::StrCat("cd ", ShellQuote(directory), " || exit 2; command -v ", program,
                                  " >/dev/null || { echo \"launch: cannot run \"", program,
                                  "\" on $(hostname)\" >&2; exit 2; }; sh -c 'echo ",
                                  kRemotePidPrefix, "$$; exec \"$@\"' sh env");
  for (const auto& [key, value] : env) absl::StrAppend(&line, " ", ShellQuote(key + "=" + value));
  for (const std::string& word : command) absl::StrAppend(&line, " ", ShellQuote(word));
  absl::StrAppend(&line, "; exit $?");
  return line;
}

}  // namespace ringwork
