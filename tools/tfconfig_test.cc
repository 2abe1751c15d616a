// Runs the real tfconfig binary: exit codes, output and the one-second bound on
// config errors.
#include <catch2/catch.hpp>
#include <sstream>

#include "testing/subprocess.h"

namespace ringwork {
namespace {

const char* kBinary = "tools/tfconfig";

SubprocessResult Run(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  Subprocess::Options options;
  options.env = std::move(env);
  options.unset_env = {"TF_CONFIG", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_NODELIST"};
  options.timeout_s = 20;
  args.insert(args.begin(), kBinary);
  return RunSubprocess(args, options);
}

TEST_CASE("validate prints the role table", "[tfconfig]") {
  auto r = Run({"validate"}, {{"TF_CONFIG", R"({"cluster": {"chief": ["127.0.0.1:2000"],
                   "worker": ["127.0.0.1:2001"]}, "task": {"type": "worker", "index": 0}})"}});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("worker:0      127.0.0.1:2001     1 no    yes     <- this task") !=
        std::string::npos);
  CHECK(r.output.find("world size 2") != std::string::npos);
}

TEST_CASE("hosts prints each task's TF_CONFIG: N workers per host, ports from --port",
          "[tfconfig]") {
  auto r = Run({"hosts", "node-a,10.0.0.2,node-c", "--port=2300", "--workers_per_host=2"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> lines;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(lines.size() == 6);
  const std::string workers =
      R"("worker":["node-a:2300","node-a:2301","10.0.0.2:2300","10.0.0.2:2301","node-c:2300","node-c:2301"])";
  for (size_t i = 0; i < lines.size(); ++i) {
    INFO(lines[i]);
    CHECK(lines[i].find(workers) != std::string::npos);
    CHECK(lines[i].find(R"("task":{"index":)" + std::to_string(i) + R"(,"type":"worker"})") !=
          std::string::npos);
  }
  // Each line is a TF_CONFIG that validates as that task.
  auto v = Run({"validate"}, {{"TF_CONFIG", lines[3]}});
  INFO(v.output);
  CHECK(v.exit_code == 0);
  CHECK(v.output.find("10.0.0.2:2301") != std::string::npos);
  CHECK(v.output.find("world size 6") != std::string::npos);
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"hosts", "a,b,a"}, "hosts[2]: \"a\" is named twice"},
           {{"hosts", "a:2222"}, "hosts[0]: \"a:2222\" is not a host name or address"},
           {{"hosts", "a,,b"}, "hosts[1]: \"\" is not a host name"},
           {{"hosts", "a", "--port=65535", "--workers_per_host=2"}, "must lie in 1..65535"},
           {{"hosts", "a", "--workers_per_host=0"}, "--workers_per_host=0: expected 1..1024"},
           {{"hosts"}, "tfconfig hosts takes one list of hosts"}}) {
    auto bad = Run(args);
    INFO(bad.output);
    CHECK(bad.exit_code == 2);
    CHECK(bad.output.find(message) != std::string::npos);
  }
}

TEST_CASE("validate without TF_CONFIG reports local mode", "[tfconfig]") {
  auto r = Run({"validate"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("no TF_CONFIG: running in single-worker local mode") != std::string::npos);
}

TEST_CASE("config errors exit 2 within a second, naming the JSON path", "[tfconfig]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 4}})",
       "TF_CONFIG.task.index: 4 is out of range"},
      {R"({"cluster": {"worker": ["a"]}, "task": {"type": "worker"}})",
       "TF_CONFIG.cluster.worker[0]: \"a\" has no port"},
      {"{not json", "TF_CONFIG: is not valid JSON: syntax error at byte 3"},
  };
  for (const auto& [tf_config, message] : cases) {
    auto r = Run({"validate"}, {{"TF_CONFIG", tf_config}});
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.elapsed_s < 1.0);
    CHECK(r.output.find(message) != std::string::npos);
    CHECK(r.output.find("(exit 2: usage or config error)") != std::string::npos);
  }
}

TEST_CASE("usage errors exit 2", "[tfconfig]") {
  CHECK(Run({}).exit_code == 2);
  CHECK(Run({"frobnicate"}).exit_code == 2);
  CHECK(Run({"validate", "--no_such_flag"}).exit_code == 2);
  CHECK(Run({"localhost", "--num_workers=0"}).exit_code == 2);
  auto help = Run({"--help"});
  CHECK(help.exit_code == 0);
  CHECK(help.output.find("tfconfig localhost") != std::string::npos);
}

TEST_CASE("localhost prints one valid TF_CONFIG per task", "[tfconfig]") {
  auto r = Run({"localhost", "--num_workers=2", "--chief"});
  REQUIRE(r.exit_code == 0);
  std::istringstream lines(r.output);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    auto v = Run({"validate", "--tf_config=" + line});
    INFO(line << "\n" << v.output);
    CHECK(v.exit_code == 0);
    CHECK(v.output.find("world size 3") != std::string::npos);
    ++count;
  }
  CHECK(count == 3);
}

TEST_CASE("from-slurm converts a Slurm task", "[tfconfig]") {
  auto r =
      Run({"from-slurm", "--slurm_base_port=9000"},
          {{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_STEP_NODELIST", "node[7-8]"}});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output ==
        "{\"cluster\":{\"worker\":[\"node7:9000\",\"node8:9000\"]},\"task\":{\"index\":1,"
        "\"type\":\"worker\"}}\n");
  auto bad = Run({"from-slurm"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("SLURM_PROCID is not set") != std::string::npos);
}

}  // namespace
}  // namespace ringwork
