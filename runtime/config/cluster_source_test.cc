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

const char* kExtra =
    R"({"cluster": {"worker": ["a:1", "b:1", "c:1", "d:1"]}, "task": {"type": "worker", "index": 3}})";

TEST_CASE("a worker added on a new host: the voting ring is the identity, extras a roster",
          "[cluster_source][elastic]") {
  ClusterSourceFlags flags;
  auto extra =
      ResolveCluster(flags, FakeEnv({{"TF_CONFIG", kExtra}, {"RINGWORK_VOTING_WORKERS", "2"}}));
  REQUIRE(extra.ok());
  CHECK(extra->is_extra());
  CHECK(extra->configured_world_size() == 2);
  CHECK(extra->roster_size() == 4);
  CHECK(extra->original_rank() == 3);
  auto voter = ResolveCluster(flags, FakeEnv({{"TF_CONFIG", kWorker0}}));
  REQUIRE(voter.ok());
  CHECK_FALSE(voter->is_extra());
  // The same job: extras never change the fingerprint of TF_CONFIG's ring.
  CHECK(extra->Fingerprint() == voter->Fingerprint());
  CHECK(extra->RosterText() == ";roster=c:1,d:1");
  auto named = ClusterConfig::ParseRosterText(extra->NormalizedRing() + extra->RosterText());
  REQUIRE(named.ok());
  REQUIRE(named->size() == 2);
  // A voter learns them; a regrouped ring with an extra as member names its address.
  auto grown = voter->WithExtraWorkers(*named);
  REQUIRE(grown.ok());
  CHECK(grown->roster_size() == 4);
  CHECK(grown->world_size() == 2);  // Known, not members.
  CHECK(grown->rank() == 0);
  CHECK(grown->Fingerprint() == voter->Fingerprint());
  const ClusterConfig ring = grown->Regrouped({0, 1, 3}, 2, false, {0, 0, 2});
  const ClusterConfig same = extra->Regrouped({0, 1, 3}, 2, false, {0, 0, 2});
  CHECK(ring.Fingerprint() == same.Fingerprint());
  CHECK(ring.NormalizedRing().find(";extra=3@d:1") != std::string::npos);
  CHECK(ring.DescribeRank(2) == "worker:3 (d:1)");
  // Membership rounds match whatever extras each side knows.
  CHECK(grown->Regrouped({0, 1, 2, 3}, 2, true).Fingerprint() ==
        voter->Regrouped({0, 1}, 2, true).Fingerprint());
  // A roster that contradicts the known one is another job's.
  auto other = voter->WithExtraWorkers(*named)->WithExtraWorkers(
      *ClusterConfig::ParseRosterText(";roster=x:1"));
  CHECK(other.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(other.status().message().find("worker:2 is c:1 here but x:1") != std::string::npos);
}

TEST_CASE("RINGWORK_VOTING_WORKERS out of range is refused", "[cluster_source][elastic]") {
  ClusterSourceFlags flags;
  for (const char* bad : {"0", "5", "two"}) {
    auto config =
        ResolveCluster(flags, FakeEnv({{"TF_CONFIG", kExtra}, {"RINGWORK_VOTING_WORKERS", bad}}));
    CHECK(config.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(config.status().message().find("RINGWORK_VOTING_WORKERS") != std::string::npos);
  }
}

}  // namespace
}  // namespace ringwork
