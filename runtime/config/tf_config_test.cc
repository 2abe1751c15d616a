#include "runtime/config/tf_config.h"

#include <catch2/catch.hpp>
#include <chrono>

namespace ringwork {
namespace {

std::string Message(const absl::StatusOr<ClusterConfig>& result) {
  return result.ok() ? "(ok)" : std::string(result.status().message());
}

constexpr const char* kThree =
    R"({"cluster": {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"]}, )";

TEST_CASE("a regrouped ring renumbers its members and has a fingerprint of its own",
          "[tf_config]") {
  auto worker = ParseTfConfig(std::string(kThree) + R"("task": {"type": "worker", "index": 1}})");
  REQUIRE(worker.ok());
  // The chief (rank 0) left: worker:0 (rank 1) becomes the chief of generation 1.
  const ClusterConfig next = worker->Regrouped({2, 1}, 1);
  CHECK(next.world_size() == 2);
  CHECK(next.configured_world_size() == 3);
  CHECK(next.rank() == 1);
  CHECK(next.original_rank() == 2);
  CHECK(next.OriginalRanks() == std::vector<int>{1, 2});
  CHECK_FALSE(next.is_chief());
  CHECK(next.DescribeRank(0) == "worker:0 (h1:2222)");
  CHECK(next.DescribeRank(1) == "worker:1 (h2:2222)");
  REQUIRE(next.Ring().size() == 2);
  CHECK(next.Ring()[0].rank == 0);
  CHECK(next.Ring()[0].task.ToString() == "worker:0");
  CHECK(next.RoleTable().find("world size 2; this task: worker:1 (rank 1)") != std::string::npos);
  auto first = ParseTfConfig(std::string(kThree) + R"("task": {"type": "worker", "index": 0}})");
  REQUIRE(first.ok());
  CHECK(first->Regrouped({1, 2}, 1).is_chief());
  // Another generation, another membership or the discovery round: another cluster.
  CHECK(next.Fingerprint() == first->Regrouped({1, 2}, 1).Fingerprint());
  CHECK(next.Fingerprint() != worker->Fingerprint());
  CHECK(next.Fingerprint() != worker->Regrouped({1, 2}, 2).Fingerprint());
  CHECK(next.Fingerprint() != worker->Regrouped({0, 2}, 1).Fingerprint());
  CHECK(next.Fingerprint() != worker->Regrouped({1, 2}, 1, /*discovery=*/true).Fingerprint());
  CHECK(worker->OriginalRanks() == std::vector<int>{0, 1, 2});
  CHECK(next.DescribeOriginalRank(0) == "chief:0 (h0:2222)");
  // A task left out of the ring has no rank in it.
  CHECK(worker->Regrouped({0, 1}, 1).rank() == -1);
}

TEST_CASE("workers joining a running ring come after its members; one alone is not the chief",
          "[tf_config]") {
  auto chief = ParseTfConfig(std::string(kThree) + R"("task": {"type": "chief", "index": 0}})");
  REQUIRE(chief.ok());
  // The chief (0) comes back into the ring of 1 and 2 at generation 3: 1 stays
  // the chief, then and at every later generation (0 is a member since 3).
  const ClusterConfig grown = chief->Regrouped({0, 1, 2}, 3, false, /*member_since=*/{3, 0, 0});
  CHECK(grown.OriginalRanks() == std::vector<int>{1, 2, 0});
  CHECK(grown.rank() == 2);
  CHECK(grown.member_since() == 3);
  CHECK_FALSE(grown.is_chief());
  CHECK(grown.Ring()[0].task.ToString() == "worker:0");
  CHECK(grown.Fingerprint() != chief->Regrouped({0, 1, 2}, 3).Fingerprint());
  const ClusterConfig later = grown.Regrouped({2, 0}, 4, false, {0, 3});
  CHECK(later.OriginalRanks() == std::vector<int>{2, 0});
  CHECK_FALSE(later.is_chief());
  CHECK(later.member_since() == 3);
  CHECK(chief->member_since() == 0);
  // Alone until it joins: a ring of itself, not the chief, its own fingerprint.
  const ClusterConfig alone = chief->Alone(2);
  CHECK(alone.world_size() == 1);
  CHECK(alone.rank() == 0);
  CHECK(alone.alone());
  CHECK_FALSE(alone.is_chief());
  CHECK(alone.Fingerprint() != chief->Regrouped({0}, 2).Fingerprint());
  // What a starting worker calls: TF_CONFIG's ring, whatever the generation.
  CHECK(grown.Configured().Fingerprint() == chief->Fingerprint());
  CHECK(alone.Configured().Fingerprint() == chief->Fingerprint());
  CHECK(chief->Regrouped({0, 1, 2}, 3).Configured().is_chief());
}

TEST_CASE("ranks, world size and chief follow TensorFlow", "[tf_config]") {
  auto chief = ParseTfConfig(std::string(kThree) + R"("task": {"type": "chief", "index": 0}})");
  REQUIRE(chief.ok());
  CHECK(chief->world_size() == 3);
  CHECK(chief->rank() == 0);
  CHECK(chief->is_chief());
  CHECK(chief->in_ring());
  CHECK(chief->address()->ToString() == "h0:2222");

  auto worker = ParseTfConfig(std::string(kThree) + R"("task": {"type": "worker", "index": 1}})");
  REQUIRE(worker.ok());
  CHECK(worker->rank() == 2);
  CHECK_FALSE(worker->is_chief());
  CHECK(worker->task().ToString() == "worker:1");
  CHECK(worker->DescribeRank(1) == "worker:0 (h1:2222)");
  REQUIRE(worker->Ring().size() == 3);
  CHECK(worker->Ring()[0].task.ToString() == "chief:0");

  // Without a chief job, worker 0 is the chief.
  auto no_chief = ParseTfConfig(
      R"({"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 0}})");
  REQUIRE(no_chief.ok());
  CHECK(no_chief->is_chief());
  CHECK(no_chief->rank() == 0);
  CHECK(no_chief->world_size() == 2);
}

TEST_CASE("evaluators are outside the ring, listed or not", "[tf_config]") {
  auto listed = ParseTfConfig(
      R"({"cluster": {"worker": ["a:1"], "evaluator": ["e:9"]},
          "task": {"type": "evaluator", "index": 0}})");
  REQUIRE(listed.ok());
  CHECK_FALSE(listed->in_ring());
  CHECK(listed->rank() == -1);
  CHECK_FALSE(listed->is_chief());
  CHECK(listed->world_size() == 1);
  CHECK(listed->address()->ToString() == "e:9");

  auto unlisted =
      ParseTfConfig(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "evaluator"}})");
  REQUIRE(unlisted.ok());
  CHECK_FALSE(unlisted->address().has_value());
  CHECK(unlisted->RoleTable().find("evaluator:0") != std::string::npos);
}

TEST_CASE("TF_CONFIG's looser forms are accepted as TF accepts them", "[tf_config]") {
  // Kubeflow's sparse form, index as a string, rpc_layer and environment.
  auto sparse = ParseTfConfig(
      R"({"cluster": {"worker": {"1": "b:2", "0": "a:1"}},
          "task": {"type": "worker", "index": "1"},
          "rpc_layer": "grpc", "environment": "cloud"})");
  REQUIRE(sparse.ok());
  CHECK(sparse->rank() == 1);
  CHECK(sparse->spec().worker[0].ToString() == "a:1");
  // A missing index defaults to 0.
  auto no_index = ParseTfConfig(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker"}})");
  REQUIRE(no_index.ok());
  CHECK(no_index->rank() == 0);
  // "master" is an alias of "chief".
  auto master = ParseTfConfig(
      R"({"cluster": {"master": ["m:1"], "worker": ["a:1"]},
          "task": {"type": "master", "index": 0}, "job": {"x": 1}})");
  REQUIRE(master.ok());
  CHECK(master->task().type == TaskType::kChief);
  CHECK(master->is_chief());
  CHECK(master->world_size() == 2);
}

TEST_CASE("numbers JSON cannot hold are a clear error, not a crash", "[tf_config]") {
  // Found by tests/fuzz/tf_config_fuzzer (nlohmann throws out_of_range, not parse_error).
  for (const char* json :
       {"7e7166667", R"({"cluster": {"worker": ["a:1"]}, "task": {"index": 1e999}})"}) {
    INFO(json);
    absl::StatusOr<ClusterConfig> config = ParseTfConfig(json);
    REQUIRE_FALSE(config.ok());
    CHECK(absl::IsInvalidArgument(config.status()));
    CHECK(config.status().message().find("TF_CONFIG") != absl::string_view::npos);
  }
}

TEST_CASE("no cluster means local mode", "[tf_config]") {
  for (const char* text :
       {"", "  ", "{}", R"({"task": {"type": "worker"}})", R"({"cluster": {}})"}) {
    INFO(text);
    auto config = ParseTfConfig(text);
    REQUIRE(config.ok());
    CHECK(config->local_mode());
    CHECK(config->world_size() == 1);
    CHECK(config->rank() == 0);
    CHECK(config->is_chief());
    CHECK_FALSE(config->address().has_value());
  }
}

TEST_CASE("the fingerprint is stable and covers exactly the ring", "[tf_config]") {
  auto chief = ParseTfConfig(std::string(kThree) + R"("task": {"type": "chief"}})");
  auto worker = ParseTfConfig(std::string(kThree) + R"("task": {"type": "worker", "index": 1}})");
  auto with_evaluator = ParseTfConfig(
      R"({"cluster": {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"],
          "evaluator": ["e:1"]}, "task": {"type": "evaluator"}})");
  auto other = ParseTfConfig(
      R"({"cluster": {"chief": ["h0:2222"], "worker": ["h2:2222", "h1:2222"]},
          "task": {"type": "chief"}})");
  REQUIRE(chief.ok());
  REQUIRE(worker.ok());
  REQUIRE(with_evaluator.ok());
  REQUIRE(other.ok());
  CHECK(chief->Fingerprint() == worker->Fingerprint());
  CHECK(chief->Fingerprint() == with_evaluator->Fingerprint());
  CHECK(chief->Fingerprint() != other->Fingerprint());
  CHECK(chief->NormalizedRing() == "v1;chief=h0:2222;worker=h1:2222,h2:2222");
  // A fixed value (FNV-1a 64 of the text above, computed independently): the
  // fingerprint must not change between builds or hosts.
  CHECK(chief->Fingerprint() == "40e56aafe0a9ccc2");
  CHECK(chief->Fingerprint().size() == 16);
}

TEST_CASE("the role table shows every task", "[tf_config]") {
  auto config = ParseTfConfig(std::string(kThree) + R"("task": {"type": "worker", "index": 0}})");
  REQUIRE(config.ok());
  const std::string table = config->RoleTable();
  CHECK(table.find("TASK") != std::string::npos);
  CHECK(table.find("chief:0       h0:2222     0 yes   yes") != std::string::npos);
  CHECK(table.find("worker:0      h1:2222     1 no    yes     <- this task") != std::string::npos);
  CHECK(table.find("world size 3; this task: worker:0 (rank 1)") != std::string::npos);
}

TEST_CASE("ToTfConfigJson round-trips", "[tf_config]") {
  auto config = ParseTfConfig(std::string(kThree) + R"("task": {"type": "worker", "index": 1}})");
  REQUIRE(config.ok());
  auto again = ParseTfConfig(ToTfConfigJson(*config));
  REQUIRE(again.ok());
  CHECK(again->Fingerprint() == config->Fingerprint());
  CHECK(again->task() == config->task());
}

// Each malformed TF_CONFIG and the exact message it must produce.
struct Malformed {
  const char* name;
  std::string json;
  std::string message;
};

std::vector<Malformed> MalformedInputs() {
  const std::string task0 = R"("task": {"type": "worker", "index": 0})";
  return {
      {"bad JSON", R"({"cluster": )",
       "TF_CONFIG: is not valid JSON: syntax error at byte 13: error while parsing "
       "value - unexpected end of input; expected '[', '{', or a literal"},
      {"trailing comma", R"({"cluster": {"worker": ["a:1",]}})",
       "TF_CONFIG: is not valid JSON: syntax error at byte 31: error while parsing "
       "value - unexpected ']'; expected '[', '{', or a literal"},
      {"not an object", R"(["a:1"])",
       "TF_CONFIG: expected a JSON object with \"cluster\" and \"task\", got array "
       "[\"a:1\"]"},
      {"cluster not an object", R"({"cluster": "a:1"})",
       "TF_CONFIG.cluster: expected an object mapping job names to task addresses, got "
       "string \"a:1\""},
      {"unknown job", R"({"cluster": {"workers": ["a:1"]}, )" + task0 + "}",
       "TF_CONFIG.cluster.workers: unknown job \"workers\"; expected \"chief\", "
       "\"worker\" or \"evaluator\" (\"master\" is accepted as an alias of \"chief\")"},
      {"ps job", R"({"cluster": {"ps": ["p:1"], "worker": ["a:1"]}, )" + task0 + "}",
       "TF_CONFIG.cluster.ps: parameter-server training (TensorFlow's "
       "ParameterServerStrategy) is not what Ringwork does: it trains with all-reduce "
       "across the chief and worker tasks. Remove the \"ps\" job and run every process "
       "as a chief or worker"},
      {"ps task", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "ps"}})",
       "TF_CONFIG.task.type: \"ps\": parameter-server training (TensorFlow's "
       "ParameterServerStrategy) is not what Ringwork does: it trains with all-reduce "
       "across the chief and worker tasks. Remove the \"ps\" job and run every process "
       "as a chief or worker"},
      {"job is a number", R"({"cluster": {"worker": 3}, )" + task0 + "}",
       "TF_CONFIG.cluster.worker: expected a list of \"host:port\" strings or an object "
       "{\"0\": \"host:port\", ...}, got number 3"},
      {"job is a string", R"({"cluster": {"worker": "a:1"}, )" + task0 + "}",
       "TF_CONFIG.cluster.worker: expected a list of \"host:port\" strings or an object "
       "{\"0\": \"host:port\", ...}, got string \"a:1\""},
      {"empty job", R"({"cluster": {"chief": ["c:1"], "worker": []}, )" + task0 + "}",
       "TF_CONFIG.cluster.worker: job \"worker\" is empty; list at least one "
       "\"host:port\" or remove the job"},
      {"empty sparse job", R"({"cluster": {"worker": {}}, )" + task0 + "}",
       "TF_CONFIG.cluster.worker: job \"worker\" is empty; list at least one "
       "\"host:port\" or remove the job"},
      {"address not a string", R"({"cluster": {"worker": ["a:1", 2]}, )" + task0 + "}",
       "TF_CONFIG.cluster.worker[1]: expected a \"host:port\" string, got number 2"},
      {"address null", R"({"cluster": {"worker": [null]}, )" + task0 + "}",
       "TF_CONFIG.cluster.worker[0]: expected a \"host:port\" string, got null"},
      {"missing port", R"({"cluster": {"worker": ["a"]}, )" + task0 + "}",
       "TF_CONFIG.cluster.worker[0]: \"a\" has no port; expected \"host:port\""},
      {"port out of range", R"({"cluster": {"worker": ["a:70000"]}, )" + task0 + "}",
       "TF_CONFIG.cluster.worker[0]: \"a:70000\" has port 70000, outside 1..65535"},
      {"port zero", R"({"cluster": {"worker": ["a:0"]}, )" + task0 + "}",
       "TF_CONFIG.cluster.worker[0]: \"a:0\" has port 0, outside 1..65535"},
      {"port not a number", R"({"cluster": {"worker": ["a:x1"]}, )" + task0 + "}",
       "TF_CONFIG.cluster.worker[0]: \"a:x1\" has a port \"x1\" that is not a number"},
      {"unbracketed IPv6", R"({"cluster": {"worker": ["fe80::1:2222"]}, )" + task0 + "}",
       "TF_CONFIG.cluster.worker[0]: \"fe80::1:2222\" looks like an IPv6 address "
       "without brackets; write \"[fe80::1]:2222\""},
      {"URL scheme", R"({"cluster": {"worker": ["grpc://a:1"]}, )" + task0 + "}",
       "TF_CONFIG.cluster.worker[0]: \"grpc://a:1\" has a URL scheme; write only "
       "\"host:port\" (the RPC layer is grpc)"},
      {"duplicate address",
       R"({"cluster": {"chief": ["a:1"], "worker": ["b:1", "a:1"]}, )" + task0 + "}",
       "TF_CONFIG.cluster.worker[1]: address \"a:1\" is also used by chief[0]; every "
       "task needs its own host:port"},
      {"duplicate address, case", R"({"cluster": {"worker": ["A:1", "a:1"]}, )" + task0 + "}",
       "TF_CONFIG.cluster.worker[1]: address \"a:1\" is also used by worker[0]; every "
       "task needs its own host:port"},
      {"two chiefs", R"({"cluster": {"chief": ["a:1", "b:1"]}, "task": {"type": "chief"}})",
       "TF_CONFIG.cluster.chief: has 2 tasks; there must be at most one chief"},
      {"two evaluators",
       R"({"cluster": {"worker": ["a:1"], "evaluator": ["e:1", "f:1"]}, )" + task0 + "}",
       "TF_CONFIG.cluster.evaluator: has 2 tasks; there must be at most one evaluator"},
      {"chief and master",
       R"({"cluster": {"chief": ["a:1"], "master": ["b:1"]}, "task": {"type": "chief"}})",
       "TF_CONFIG.cluster: has both \"chief\" and \"master\"; \"master\" is an alias of "
       "\"chief\", so keep only one of them"},
      {"only an evaluator", R"({"cluster": {"evaluator": ["e:1"]}, "task": {"type": "evaluator"}})",
       "TF_CONFIG.cluster: has no \"chief\" or \"worker\" job; a training cluster needs "
       "at least one of them"},
      {"sparse gap", R"({"cluster": {"worker": {"0": "a:1", "2": "b:1"}}, )" + task0 + "}",
       "TF_CONFIG.cluster.worker: sparse job is missing task index 1; indices must run "
       "from 0 to 1 without gaps"},
      {"sparse bad key", R"({"cluster": {"worker": {"zero": "a:1"}}, )" + task0 + "}",
       "TF_CONFIG.cluster.worker[\"zero\"]: index \"zero\" is not a non-negative integer"},
      {"sparse padded key", R"({"cluster": {"worker": {"00": "a:1"}}, )" + task0 + "}",
       "TF_CONFIG.cluster.worker[\"00\"]: index \"00\" is not a non-negative integer"},
      {"no task", R"({"cluster": {"worker": ["a:1"]}})",
       "TF_CONFIG.task: is missing; with a \"cluster\", TF_CONFIG must say which task "
       "this process is, e.g. \"task\": {\"type\": \"worker\", \"index\": 0}"},
      {"task not an object", R"({"cluster": {"worker": ["a:1"]}, "task": "worker:0"})",
       "TF_CONFIG.task: expected an object {\"type\": ..., \"index\": ...}, got string "
       "\"worker:0\""},
      {"task type missing", R"({"cluster": {"worker": ["a:1"]}, "task": {"index": 0}})",
       "TF_CONFIG.task.type: is missing; expected \"chief\", \"worker\" or \"evaluator\""},
      {"task type not a string", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": 1}})",
       "TF_CONFIG.task.type: expected a string, got number 1"},
      {"unknown task type", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "Worker"}})",
       "TF_CONFIG.task.type: unknown task type \"Worker\"; expected \"chief\", "
       "\"worker\" or \"evaluator\""},
      {"task type without job", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "chief"}})",
       "TF_CONFIG.task.type: \"chief\" has no job in TF_CONFIG.cluster"},
      {"negative index",
       R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": -1}})",
       "TF_CONFIG.task.index: index -1 is negative; task indices start at 0"},
      {"fractional index",
       R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0.5}})",
       "TF_CONFIG.task.index: expected a non-negative integer task index, got number 0.5"},
      {"boolean index",
       R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": true}})",
       "TF_CONFIG.task.index: expected a non-negative integer task index, got boolean "
       "true"},
      {"index out of range",
       R"({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 2}})",
       "TF_CONFIG.task.index: 2 is out of range; job \"worker\" has 2 tasks (indices "
       "0..1)"},
      {"huge index",
       R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 99999999999}})",
       "TF_CONFIG.task.index: 99999999999 is out of range (at most 65536 tasks per job)"},
      {"evaluator index out of range",
       R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "evaluator", "index": 1}})",
       "TF_CONFIG.task.index: 1 is out of range; there is at most one evaluator (index "
       "0)"},
      {"rpc_layer not grpc",
       R"({"cluster": {"worker": ["a:1"]}, )" + task0 + R"(, "rpc_layer": "grpc+verbs"})",
       "TF_CONFIG.rpc_layer: \"grpc+verbs\" is not supported; Ringwork speaks only "
       "\"grpc\""},
      {"rpc_layer not a string",
       R"({"cluster": {"worker": ["a:1"]}, )" + task0 + R"(, "rpc_layer": 1})",
       "TF_CONFIG.rpc_layer: expected the string \"grpc\", got number 1"},
      {"oversized", std::string(kMaxTfConfigBytes + 1, ' '),
       "TF_CONFIG: is 1048577 bytes; the limit is 1048576 bytes"},
  };
}

TEST_CASE("malformed TF_CONFIGs are refused with their specific message", "[tf_config]") {
  const std::vector<Malformed> inputs = MalformedInputs();
  REQUIRE(inputs.size() >= 30);
  for (const Malformed& input : inputs) {
    INFO(input.name);
    const auto start = std::chrono::steady_clock::now();
    auto result = ParseTfConfig(input.json);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(Message(result) == input.message);
    CHECK(elapsed < std::chrono::seconds(1));
  }
}

TEST_CASE("deeply nested JSON is refused without crashing", "[tf_config]") {
  std::string deep(100000, '[');
  auto result = ParseTfConfig(deep);
  REQUIRE_FALSE(result.ok());
  CHECK(Message(result).rfind("TF_CONFIG: is not valid JSON: syntax error at byte", 0) == 0);
}

}  // namespace
}  // namespace ringwork
