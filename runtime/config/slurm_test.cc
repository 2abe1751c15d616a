#include "runtime/config/slurm.h"

#include <catch2/catch.hpp>
#include <map>

namespace ringwork {
namespace {

EnvLookup FakeEnv(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST_CASE("hostlists expand like Slurm's", "[slurm]") {
  using V = std::vector<std::string>;
  CHECK(*ExpandHostlist("node[01-04,07]") == V{"node01", "node02", "node03", "node04", "node07"});
  CHECK(*ExpandHostlist("a,b[1-2],c") == V{"a", "b1", "b2", "c"});
  CHECK(*ExpandHostlist("r[1-2]-n[8-9]") == V{"r1-n8", "r1-n9", "r2-n8", "r2-n9"});
  CHECK(*ExpandHostlist("n[098-101]") == V{"n098", "n099", "n100", "n101"});
  CHECK(*ExpandHostlist("single") == V{"single"});
}

TEST_CASE("bad hostlists are refused with the list in the message", "[slurm]") {
  for (const char* bad :
       {"", "n[1-", "n]1", "n[3-1]", "n[a-b]", "n[1-2-3]", "a,,b", "n[0-99999999]"}) {
    INFO(bad);
    auto result = ExpandHostlist(bad);
    REQUIRE_FALSE(result.ok());
    CHECK(std::string(result.status().message())
              .rfind(std::string("SLURM_STEP_NODELIST \"") + bad + "\"", 0) == 0);
  }
}

TEST_CASE("tasks per node expand", "[slurm]") {
  CHECK(*ExpandTasksPerNode("2(x3),1") == std::vector<int>{2, 2, 2, 1});
  CHECK(*ExpandTasksPerNode("4") == std::vector<int>{4});
  CHECK_FALSE(ExpandTasksPerNode("2(x)").ok());
  CHECK_FALSE(ExpandTasksPerNode("x").ok());
  CHECK_FALSE(ExpandTasksPerNode("0").ok());
}

TEST_CASE("a Slurm step becomes workers with block distribution", "[slurm]") {
  auto env = FakeEnv({{"SLURM_PROCID", "3"},
                      {"SLURM_NTASKS", "5"},
                      {"SLURM_STEP_NODELIST", "node[01-02],gpu7"},
                      {"SLURM_STEP_TASKS_PER_NODE", "2(x2),1"},
                      {"SLURMD_NODENAME", "node02"}});
  REQUIRE(LooksLikeSlurmStep(env));
  auto config = ClusterFromSlurm(env, 9000);
  REQUIRE(config.ok());
  CHECK(config->world_size() == 5);
  CHECK(config->rank() == 3);
  CHECK_FALSE(config->is_chief());
  CHECK(config->address()->ToString() == "node02:9001");
  CHECK(config->spec().worker[0].ToString() == "node01:9000");
  CHECK(config->spec().worker[4].ToString() == "gpu7:9000");
  CHECK(config->source() == "Slurm");
}

TEST_CASE("Slurm inconsistencies are named", "[slurm]") {
  std::map<std::string, std::string> base = {
      {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_STEP_NODELIST", "n[1-2]"}};
  {
    auto vars = base;
    vars.erase("SLURM_PROCID");
    auto result = ClusterFromSlurm(FakeEnv(vars), 9000);
    REQUIRE_FALSE(result.ok());
    CHECK(std::string(result.status().message()) ==
          "Slurm: environment variable SLURM_PROCID is not set; run the workers with "
          "srun inside an allocation");
  }
  {
    auto vars = base;
    vars["SLURM_STEP_TASKS_PER_NODE"] = "3,2";
    auto result = ClusterFromSlurm(FakeEnv(vars), 9000);
    REQUIRE_FALSE(result.ok());
    CHECK(std::string(result.status().message()) ==
          "Slurm: SLURM_STEP_TASKS_PER_NODE adds up to 5 tasks but SLURM_NTASKS=4");
  }
  {
    auto vars = base;
    vars["SLURMD_NODENAME"] = "n2";
    auto result = ClusterFromSlurm(FakeEnv(vars), 9000);
    REQUIRE_FALSE(result.ok());
    CHECK(std::string(result.status().message()) ==
          "Slurm: SLURM_PROCID=0 runs on n2 but block distribution places it on n1; "
          "start the step with srun --distribution=block");
  }
  {
    auto result = ClusterFromSlurm(FakeEnv(base), 65535);
    REQUIRE_FALSE(result.ok());
    CHECK(std::string(result.status().message()).find("--slurm_base_port") != std::string::npos);
  }
  {
    auto vars = base;
    vars["SLURM_NTASKS"] = "3";
    auto result = ClusterFromSlurm(FakeEnv(vars), 9000);
    REQUIRE_FALSE(result.ok());
    CHECK(std::string(result.status().message()).find("does not divide evenly") !=
          std::string::npos);
  }
}

}  // namespace
}  // namespace ringwork
