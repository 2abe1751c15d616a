// Runs the real launch binary over /bin/sh scripts.
#include <catch2/catch.hpp>

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
  CHECK(r.output.find("[worker:1] \"task\":{\"index\":1,\"type\":\"worker\"}") != std::string::npos);
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

TEST_CASE("bad usage exits 2", "[launch]") {
  Subprocess::Options options;
  CHECK(RunSubprocess({"tools/launch/launch", "--num_workers=2"}, options).exit_code == 2);
  CHECK(RunSubprocess({"tools/launch/launch", "--", "/no/such/program"}, options).exit_code == 2);
  CHECK(RunSubprocess({"tools/launch/launch", "--num_workers=0", "--", "/bin/true"}, options)
            .exit_code == 2);
}

}  // namespace
}  // namespace ringwork
