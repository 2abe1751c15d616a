#include "runtime/config/localhost.h"

#include <catch2/catch.hpp>
#include <set>

#include "runtime/config/tf_config.h"

namespace ringwork {
namespace {

TEST_CASE("free ports are distinct and non-zero", "[localhost]") {
  auto ports = PickFreePorts(16);
  REQUIRE(ports.ok());
  std::set<int> unique(ports->begin(), ports->end());
  CHECK(unique.size() == 16);
  CHECK(unique.count(0) == 0);
}

TEST_CASE("a localhost spec makes valid TF_CONFIGs for every task", "[localhost]") {
  auto spec = LocalhostClusterSpec(3, /*with_chief=*/true, /*with_evaluator=*/true);
  REQUIRE(spec.ok());
  const std::vector<TaskId> tasks = AllTasks(*spec);
  REQUIRE(tasks.size() == 5);
  CHECK(tasks.front().ToString() == "chief:0");
  CHECK(tasks.back().ToString() == "evaluator:0");
  std::set<std::string> fingerprints;
  for (const TaskId& task : tasks) {
    auto config = ParseTfConfig(ToTfConfigJson(ClusterConfig(*spec, task, "test")));
    REQUIRE(config.ok());
    CHECK(config->task() == task);
    fingerprints.insert(config->Fingerprint());
  }
  CHECK(fingerprints.size() == 1);
}

TEST_CASE("a localhost spec refuses nonsense sizes", "[localhost]") {
  CHECK_FALSE(LocalhostClusterSpec(0, false).ok());
  CHECK_FALSE(LocalhostClusterSpec(-1, true).ok());
  CHECK(LocalhostClusterSpec(0, true).ok());
}

}  // namespace
}  // namespace ringwork
