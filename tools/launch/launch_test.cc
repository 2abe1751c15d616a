// Runs the real launch binary over /bin/sh scripts.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "testing/subprocess.h"

namespace ringwork {
namespace {

SubprocessResult Launch(std::vector<std::string> flags, const std::string& script) {
  std::vector<std::string> argv = {"tools/launch/launch"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"--", "/bin/sh", "-c", script});
  Subprocess::Options options;
  options.timeout_s = 60;
  return RunSubprocess(argv, options);
}

TEST_CASE("every task gets its TF_CONFIG and its output prefix", "[launch]") {
  auto r = Launch({"--num_workers=2", "--chief"},
                  "echo \"task $TF_CONFIG\" | grep -o '\"task\":{[^}]*}'; echo err >&2");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("[chief:0] \"task\":{\"index\":0,\"type\":\"chief\"}") != std::string::npos);
  CHECK(r.output.find("[worker:1] \"task\":{\"index\":1,\"type\":\"worker\"}") !=
        std::string::npos);
  CHECK(r.output.find("[worker:0] err") != std::string::npos);
}

TEST_CASE("the first failure's exit code wins and the others are stopped", "[launch]") {
  // worker:0 fails with 3 after a moment; worker:1 would sleep for a minute.
  auto r = Launch({"--num_workers=2", "--grace_s=0.5", "--kill_s=1"},
                  "case \"$TF_CONFIG\" in *'\"index\":0'*) sleep 0.3; exit 3;; "
                  "*) exec sleep 60;; esac");
  INFO(r.output);
  CHECK(r.exit_code == 3);
  CHECK(r.elapsed_s < 10);
  CHECK(r.output.find("worker:0 exited with code 3 (peer failure or unreachable)") !=
        std::string::npos);
  CHECK(r.output.find("stopping worker:1 with SIGTERM") != std::string::npos);
}

TEST_CASE("a task that ignores SIGTERM is killed", "[launch]") {
  auto r = Launch({"--num_workers=2", "--grace_s=0.2", "--kill_s=0.5"},
                  "case \"$TF_CONFIG\" in *'\"index\":0'*) exit 7;; "
                  "*) trap '' TERM; sleep 30;; esac");
  INFO(r.output);
  CHECK(r.exit_code == 7);
  CHECK(r.elapsed_s < 10);
  CHECK(r.output.find("stopping worker:1 with SIGKILL") != std::string::npos);
}

TEST_CASE("a task killed by a signal reports 128 + signal", "[launch]") {
  auto r = Launch({"--num_workers=1"}, "kill -9 $$");
  CHECK(r.exit_code == 137);
}

TEST_CASE("--timeline: ring tasks write parts that are merged; no part is an error", "[launch]") {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string merged = std::string(tmp != nullptr ? tmp : "/tmp") + "/launch_timeline.json";
  // Each ring task writes a minimal timeline where launch tells it to; the
  // evaluator is told nothing.
  auto r = Launch(
      {"--num_workers=2", "--evaluator", "--timeline=" + merged},
      "if [ -n \"$RINGWORK_TIMELINE\" ]; then "
      "r=$(echo \"$TF_CONFIG\" | grep -o '\"index\":[0-9]' | grep -o '[0-9]'); "
      "printf '{\"otherData\":{\"rank\":%s,\"host\":\"h\",\"clock_offset_us\":0},"
      "\"traceEvents\":[{\"ph\":\"X\",\"name\":\"allreduce\",\"pid\":%s,\"ts\":%s,\"dur\":1}]}' "
      "$r $r $((r * 100 + 100)) > \"$RINGWORK_TIMELINE\"; "
      "else echo \"no timeline for $TF_CONFIG\" | grep -o 'no timeline.*evaluator'; fi");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("timeline of 2 tasks written to " + merged) != std::string::npos);
  CHECK(r.output.find("[evaluator:0] no timeline") != std::string::npos);
  std::ifstream in(merged);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str().find("\"pid\":1") != std::string::npos);
  CHECK(text.str().find("\"ts\":100") != std::string::npos);  // Shifted: the job starts at 0.
  // Tasks that succeed but write no timeline: the merge fails the job (exit 2).
  r = Launch({"--num_workers=1", "--timeline=" + merged}, "true");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("no task wrote a timeline") != std::string::npos);
  // A place the parts cannot go.
  r = Launch({"--num_workers=1", "--timeline=/no/such/dir/t.json"}, "true");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("/no/such/dir/t.json.parts") != std::string::npos);
}

TEST_CASE("--hosts: tasks through the remote shell, their exit codes, stopped there", "[launch]") {
  // A remote shell that runs the line here, as `ssh HOST LINE` would there, in a
  // session of its own (a signal to launch's child reaches nothing of it).
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string shell = std::string(tmp != nullptr ? tmp : "/tmp") + "/fake_ssh";
  std::ofstream(shell) << "#!/bin/sh\nexec setsid -w sh -c \"$2\"\n";
  REQUIRE(::chmod(shell.c_str(), 0755) == 0);
  // worker:0 (on node-a) dies of SIGKILL; worker:1 (node-b) would sleep a minute
  // and is stopped with SIGTERM on its host.
  auto r = Launch({"--hosts=node-a,node-b", "--remote_shell=" + shell, "--port=3000",
                   "--grace_s=0.3", "--kill_s=5"},
                  "echo \"cluster $(echo \"$TF_CONFIG\" | grep -o '\"worker\":[^]]*]')\"; "
                  "case \"$TF_CONFIG\" in *'\"index\":0'*) sleep 0.3; kill -9 $$;; "
                  "*) exec sleep 61.25;; esac");
  INFO(r.output);
  CHECK(r.exit_code == 137);
  CHECK(r.elapsed_s < 20);
  // Each host's tasks on --port, --port + 1, ... (as tfconfig hosts).
  CHECK(r.output.find("[worker:0] cluster \"worker\":[\"node-a:3000\",\"node-b:3000\"]") !=
        std::string::npos);
  CHECK(r.output.find("worker:0 exited with code 137 (killed by signal 9)") != std::string::npos);
  CHECK(r.output.find("stopping worker:1 with SIGTERM") != std::string::npos);
  CHECK(r.output.find("worker:1 exited with code 143") != std::string::npos);
  CHECK(r.output.find("RINGWORK_REMOTE_PID") == std::string::npos);  // Launch's, not shown.
  // The "remote" sleep ended on its host (it was signalled there, not just its ssh).
  SubprocessResult left = RunSubprocess({"/usr/bin/pgrep", "-f", "sleep 61.25"}, {});
  CHECK(left.exit_code == 1);  // pgrep: nothing matched.
  // Refused: a host twice, a count that disagrees, an evaluator.
  Subprocess::Options options;
  SubprocessResult refused =
      RunSubprocess({"tools/launch/launch", "--hosts=a,b,a", "--", "/bin/true"}, options);
  CHECK(refused.exit_code == 2);
  CHECK(refused.output.find("--hosts, host 3: host a is listed twice") != std::string::npos);
  refused = RunSubprocess(
      {"tools/launch/launch", "--hosts=a,b:2", "--num_workers=2", "--", "/bin/true"}, options);
  CHECK(refused.exit_code == 2);
  CHECK(refused.output.find("--hosts=a,b:2 has 3 slots") != std::string::npos);
  refused = RunSubprocess({"tools/launch/launch", "--hosts=a,b", "--evaluator", "--", "/bin/true"},
                          options);
  CHECK(refused.exit_code == 2);
}

TEST_CASE("bad usage exits 2", "[launch]") {
  Subprocess::Options options;
  CHECK(RunSubprocess({"tools/launch/launch", "--num_workers=2"}, options).exit_code == 2);
  CHECK(RunSubprocess({"tools/launch/launch", "--", "/no/such/program"}, options).exit_code == 2);
  CHECK(RunSubprocess({"tools/launch/launch", "--num_workers=0", "--", "/bin/true"}, options)
            .exit_code == 2);
}

}  // namespace
}  // namespace ringwork
