#include "runtime/config/cluster_source.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
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

const char* kWorker1 =
    R"({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 1}})";
const char* kWorker0 =
    R"({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 0}})";

std::string TempPath(const char* name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

TEST_CASE("an explicit flag overrides TF_CONFIG in the environment", "[cluster_source]") {
  ClusterSourceFlags flags;
  flags.tf_config = kWorker1;
  auto config = ResolveCluster(flags, FakeEnv({{"TF_CONFIG", kWorker0}}));
  REQUIRE(config.ok());
  CHECK(config->rank() == 1);
  CHECK(config->source() == "--tf_config");
}

TEST_CASE("a TF_CONFIG file is read and its errors name the file", "[cluster_source]") {
  const std::string path = TempPath("tf_config.json");
  { std::ofstream(path) << kWorker1; }
  ClusterSourceFlags flags;
  flags.tf_config_file = path;
  auto config = ResolveCluster(flags, FakeEnv({}));
  REQUIRE(config.ok());
  CHECK(config->rank() == 1);
  { std::ofstream(path) << R"({"cluster": {"worker": ["a"]}, "task": {"type": "worker"}})"; }
  auto bad = ResolveCluster(flags, FakeEnv({}));
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()) ==
        "in --tf_config_file=" + path +
            ": TF_CONFIG.cluster.worker[0]: \"a\" has no port; expected \"host:port\"");
  std::remove(path.c_str());
  auto missing = ResolveCluster(flags, FakeEnv({}));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(std::string(missing.status().message()) ==
        "--tf_config_file=" + path + ": cannot read the file: No such file or directory");
}

TEST_CASE("both explicit flags at once are refused", "[cluster_source]") {
  ClusterSourceFlags flags;
  flags.tf_config = kWorker1;
  flags.tf_config_file = "/x";
  auto result = ResolveCluster(flags, FakeEnv({}));
  REQUIRE_FALSE(result.ok());
  CHECK(std::string(result.status().message()) == "give --tf_config or --tf_config_file, not both");
}

TEST_CASE("auto: TF_CONFIG, then Slurm, then local", "[cluster_source]") {
  ClusterSourceFlags flags;
  auto from_env = ResolveCluster(flags, FakeEnv({{"TF_CONFIG", kWorker1}}));
  REQUIRE(from_env.ok());
  CHECK(from_env->source() == "TF_CONFIG");

  const std::map<std::string, std::string> slurm = {
      {"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_STEP_NODELIST", "n[1-2]"}};
  auto from_slurm = ResolveCluster(flags, FakeEnv(slurm));
  REQUIRE(from_slurm.ok());
  CHECK(from_slurm->source() == "Slurm");
  CHECK(from_slurm->address()->ToString() == "n2:8470");

  auto local = ResolveCluster(flags, FakeEnv({}));
  REQUIRE(local.ok());
  CHECK(local->local_mode());

  flags.cluster_from = "local";
  auto forced = ResolveCluster(flags, FakeEnv({{"TF_CONFIG", kWorker1}}));
  REQUIRE(forced.ok());
  CHECK(forced->local_mode());

  flags.cluster_from = "tf_config";
  auto required = ResolveCluster(flags, FakeEnv({}));
  REQUIRE_FALSE(required.ok());
  CHECK(std::string(required.status().message()) ==
        "--cluster_from=tf_config, but the TF_CONFIG environment variable is not set");

  flags.cluster_from = "yaml";
  auto unknown = ResolveCluster(flags, FakeEnv({}));
  REQUIRE_FALSE(unknown.ok());
  CHECK(std::string(unknown.status().message()) ==
        "--cluster_from=yaml: expected auto, tf_config, slurm or local");
}

}  // namespace
}  // namespace ringwork
