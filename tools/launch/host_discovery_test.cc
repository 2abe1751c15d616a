#include "tools/launch/host_discovery.h"

#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>

namespace ringwork {
namespace {

TEST_CASE("a host list: hosts, slots, comments", "[host_discovery]") {
  auto hosts =
      ParseHostList("# the pool\nnode1\n  node2:4  # big\n\n10.0.0.3:1\n[fd00::1]:2\nfd00::2\n");
  INFO(hosts.status().message());
  REQUIRE(hosts.ok());
  CHECK(*hosts == std::vector<DiscoveredHost>{
                      {"node1", 1}, {"node2", 4}, {"10.0.0.3", 1}, {"fd00::1", 2}, {"fd00::2", 1}});
}

TEST_CASE("a malformed host list names its line", "[host_discovery]") {
  for (const char* bad : {"node1\nnode2:zero\n", "node1\nnode2:0\n", "a b\n", "x;rm\n", "[::1\n",
                          "[::1]x:2\n", "-oProxyCommand=x\n"}) {
    auto hosts = ParseHostList(bad);
    INFO(bad);
    CHECK(hosts.status().code() == absl::StatusCode::kInvalidArgument);
  }
  auto twice = ParseHostList("node1\nnode1:2\n");
  CHECK(twice.status().message() == "host discovery, line 2: host node1 is listed twice");
  CHECK(ParseHostList("a\nb:x\n").status().message().find("line 2 (\"b:x\")") != std::string::npos);
}

TEST_CASE("the discovery command runs; its failure and its timeout are UNAVAILABLE",
          "[host_discovery]") {
  auto hosts = DiscoverHosts("printf 'h1\\nh2:2\\n'", 5);
  REQUIRE(hosts.ok());
  CHECK(hosts->size() == 2);
  CHECK(DiscoverHosts("exit 3", 5).status().code() == absl::StatusCode::kUnavailable);
  // A child left in the background holding the output open does not hold it up.
  auto background = DiscoverHosts("echo h1; sleep 30 &", 5);
  REQUIRE(background.ok());
  CHECK(background->size() == 1);
  auto slow = DiscoverHosts("sleep 30", 0.3);
  CHECK(slow.status().code() == absl::StatusCode::kUnavailable);
  CHECK(slow.status().message().find("took over 0.3 s") != std::string::npos);
}

TEST_CASE("a remote command line quotes every word and carries the environment",
          "[host_discovery]") {
  CHECK(ShellQuote("it's") == "'it'\\''s'");
  CHECK(RemoteCommandLine("/w d", {{"TF_CONFIG", "{\"a\": 1}"}}, {"/bin/train", "--x=y z"}) ==
        "cd '/w d' || exit 2; command -v '/bin/train' >/dev/null || { echo \"launch: cannot "
        "run \"'/bin/train'\" on $(hostname)\" >&2; exit 2; }; sh -c 'echo "
        "RINGWORK_REMOTE_PID=$$; exec \"$@\"' sh env 'TF_CONFIG={\"a\": 1}' '/bin/train' "
        "'--x=y z'; exit $?");
  // Run by a shell, it says the program's pid, and exits with its code or 128 + its
  // signal (the program here: sh itself).
  auto run = [](const std::string& line, std::string* output) {
    FILE* shell = ::popen(("/bin/sh -c " + ShellQuote(line) + " 2>&1").c_str(), "r");
    REQUIRE(shell != nullptr);
    char buffer[256];
    while (std::fgets(buffer, sizeof(buffer), shell) != nullptr) *output += buffer;
    const int status = ::pclose(shell);
    REQUIRE(WIFEXITED(status));
    return WEXITSTATUS(status);
  };
  std::string output;
  CHECK(run(RemoteCommandLine("/", {{"X", "it's"}}, {"/bin/sh", "-c", "echo \"$X\"; kill -9 $$"}),
            &output) == 137);
  CHECK(output.rfind("RINGWORK_REMOTE_PID=", 0) == 0);
  CHECK(output.find("\nit's\n") != std::string::npos);
  // A program or a directory that is not on the host: exit 2, saying so.
  output.clear();
  CHECK(run(RemoteCommandLine("/", {}, {"/no/such/train"}), &output) == 2);
  CHECK(output.find("launch: cannot run /no/such/train on ") != std::string::npos);
  output.clear();
  CHECK(run(RemoteCommandLine("/no/such/dir", {}, {"/bin/true"}), &output) == 2);
  CHECK(IsLoopbackHost("localhost"));
  CHECK(IsLoopbackHost("127.0.0.1"));
  CHECK_FALSE(IsLoopbackHost("10.0.0.1"));
}

}  // namespace
}  // namespace ringwork
