#include "runtime/config/tf_config.h"

#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"
#include "base/status_macros.h"

namespace ringwork {
namespace {

using Json = nlohmann::json;

constexpr absl::string_view kRoot = "TF_CONFIG";

constexpr absl::string_view kPsRefusal =
    "parameter-server training (TensorFlow's ParameterServerStrategy) is not what "
    "Ringwork does: it trains with all-reduce across the chief and worker tasks. "
    "Remove the \"ps\" job and run every process as a chief or worker";

absl::Status Error(absl::string_view path, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", problem));
}

// A short rendering of a JSON value for messages: its type and, if small, its text.
std::string Describe(const Json& value) {
  std::string text = value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  if (value.is_null()) return "null";
  if (value.is_string()) return absl::StrCat("string ", text);
  if (value.is_boolean()) return absl::StrCat("boolean ", text);
  if (value.is_number()) return absl::StrCat("number ", text);
  if (value.is_array()) return absl::StrCat("array ", text);
  return absl::StrCat("object ", text);
}

// The role a job name plays, or nullopt for names TF_CONFIG does not allow.
struct JobName {
  TaskType type;
  bool is_ps = false;
  bool is_master_alias = false;
};

std::optional<JobName> ClassifyJob(absl::string_view name) {
  if (name == "chief") return JobName{TaskType::kChief};
  if (name == "master") return JobName{TaskType::kChief, false, true};
  if (name == "worker") return JobName{TaskType::kWorker};
  if (name == "evaluator") return JobName{TaskType::kEvaluator};
  if (name == "ps") return JobName{TaskType::kWorker, true};
  return std::nullopt;
}

// A task index: a non-negative JSON integer, or a canonical decimal string (TF
// calls int() on it, and Kubeflow's sparse keys are strings).
absl::StatusOr<int64_t> ParseIndex(const Json& value, absl::string_view path) {
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    if (v > kMaxTasksPerJob) {
      return Error(
          path, absl::StrCat(v, " is out of range (at most ", kMaxTasksPerJob, " tasks per job)"));
    }
    return static_cast<int64_t>(v);
  }
  if (value.is_number_integer()) {
    return Error(path,
                 absl::StrCat("index ", value.dump(), " is negative; task indices start at 0"));
  }
  if (value.is_string()) {
    const std::string text = value.get<std::string>();
    int64_t v = 0;
    const bool canonical = !text.empty() && text.size() <= 6 &&
                           std::all_of(text.begin(), text.end(), ::isdigit) &&
                           (text == "0" || text[0] != '0');
    if (!canonical || !absl::SimpleAtoi(text, &v)) {
      return Error(path, absl::StrCat("index \"", absl::CHexEscape(text),
                                      "\" is not a non-negative integer"));
    }
    if (v > static_cast<int64_t>(kMaxTasksPerJob)) {
      return Error(
          path, absl::StrCat(v, " is out of range (at most ", kMaxTasksPerJob, " tasks per job)"));
    }
    return v;
  }
  return Error(path,
               absl::StrCat("expected a non-negative integer task index, got ", Describe(value)));
}

absl::StatusOr<std::vector<HostPort>> ParseJob(const std::string& job_name, const Json& job,
                                               const std::string& job_path) {
  std::vector<std::pair<std::string, const Json*>> entries;  // (path, address)
  if (job.is_array()) {
    if (job.size() > kMaxTasksPerJob) {
      return Error(job_path, absl::StrCat("has ", job.size(), " tasks; at most ", kMaxTasksPerJob,
                                          " are allowed"));
    }
    for (size_t i = 0; i < job.size(); ++i) {
      entries.emplace_back(absl::StrCat(job_path, "[", i, "]"), &job[i]);
    }
  } else if (job.is_object()) {
    // Kubeflow's sparse form: {"0": "host:port", "1": ...}. Ringwork needs every
    // index from 0 to N-1, because every ring member must be reachable.
    std::map<int64_t, std::pair<std::string, const Json*>> by_index;
    for (auto it = job.begin(); it != job.end(); ++it) {
      const std::string path = absl::StrCat(job_path, "[\"", it.key(), "\"]");
      RW_ASSIGN_OR_RETURN(int64_t index, ParseIndex(Json(it.key()), path));
      by_index[index] = {path, &it.value()};
    }
    int64_t expected = 0;
    for (const auto& [index, entry] : by_index) {
      if (index != expected) {
        return Error(job_path, absl::StrCat("sparse job is missing task index ", expected,
                                            "; indices must run from 0 to ", by_index.size() - 1,
                                            " without gaps"));
      }
      ++expected;
      entries.push_back(entry);
    }
  } else {
    return Error(job_path, absl::StrCat("expected a list of \"host:port\" strings or an object "
                                        "{\"0\": \"host:port\", ...}, got ",
                                        Describe(job)));
  }
  if (entries.empty()) {
    return Error(job_path, absl::StrCat("job \"", job_name,
                                        "\" is empty; list at least one \"host:port\" "
                                        "or remove the job"));
  }
  std::vector<HostPort> addresses;
  for (const auto& [path, value] : entries) {
    if (!value->is_string()) {
      return Error(path, absl::StrCat("expected a \"host:port\" string, got ", Describe(*value)));
    }
    RW_ASSIGN_OR_RETURN(HostPort address, ParseHostPort(value->get<std::string>(), path));
    addresses.push_back(std::move(address));
  }
  return addresses;
}

absl::StatusOr<ClusterSpec> ParseCluster(const Json& cluster) {
  const std::string cluster_path = absl::StrCat(kRoot, ".cluster");
  if (!cluster.is_object()) {
    return Error(cluster_path, absl::StrCat("expected an object mapping job names to "
                                            "task addresses, got ",
                                            Describe(cluster)));
  }
  ClusterSpec spec;
  std::map<std::string, std::string> address_owner;  // "host:port" -> "worker[1]"
  bool has_chief = false, has_master = false;
  for (auto it = cluster.begin(); it != cluster.end(); ++it) {
    const std::string& name = it.key();
    const std::string job_path = absl::StrCat(cluster_path, ".", name);
    std::optional<JobName> job = ClassifyJob(name);
    if (!job) {
      return Error(job_path, absl::StrCat("unknown job \"", absl::CHexEscape(name),
                                          "\"; expected \"chief\", \"worker\" or \"evaluator\" "
                                          "(\"master\" is accepted as an alias of \"chief\")"));
    }
    if (job->is_ps) return Error(job_path, kPsRefusal);
    RW_ASSIGN_OR_RETURN(std::vector<HostPort> addresses, ParseJob(name, it.value(), job_path));
    if (job->type == TaskType::kChief) {
      (job->is_master_alias ? has_master : has_chief) = true;
      if (has_chief && has_master) {
        return Error(cluster_path,
                     "has both \"chief\" and \"master\"; \"master\" is an alias of "
                     "\"chief\", so keep only one of them");
      }
      if (addresses.size() > 1) {
        return Error(job_path, absl::StrCat("has ", addresses.size(),
                                            " tasks; there must be at most one chief"));
      }
      if (job->is_master_alias) {
        RW_LOG(WARNING) << job_path
                        << ": the \"master\" job is treated as \"chief\" (an alias "
                           "some cloud platforms emit)";
      }
    }
    if (job->type == TaskType::kEvaluator && addresses.size() > 1) {
      return Error(job_path, absl::StrCat("has ", addresses.size(),
                                          " tasks; there must be at most one evaluator"));
    }
    for (size_t i = 0; i < addresses.size(); ++i) {
      const std::string owner = absl::StrCat(name, "[", i, "]");
      auto [where, inserted] = address_owner.emplace(addresses[i].ToString(), owner);
      if (!inserted) {
        return Error(absl::StrCat(job_path, "[", i, "]"),
                     absl::StrCat("address \"", addresses[i].ToString(), "\" is also used by ",
                                  where->second, "; every task needs its own host:port"));
      }
    }
    spec.Job(job->type) = std::move(addresses);
  }
  if (spec.chief.empty() && spec.worker.empty()) {
    return Error(cluster_path,
                 "has no \"chief\" or \"worker\" job; a training cluster needs at least "
                 "one of them");
  }
  return spec;
}

absl::StatusOr<TaskId> ParseTask(const Json& root, const ClusterSpec& spec) {
  const std::string task_path = absl::StrCat(kRoot, ".task");
  if (!root.contains("task")) {
    return Error(task_path,
                 "is missing; with a \"cluster\", TF_CONFIG must say which task this "
                 "process is, e.g. \"task\": {\"type\": \"worker\", \"index\": 0}");
  }
  const Json& task = root.at("task");
  if (!task.is_object()) {
    return Error(task_path, absl::StrCat("expected an object {\"type\": ..., "
                                         "\"index\": ...}, got ",
                                         Describe(task)));
  }
  const std::string type_path = absl::StrCat(task_path, ".type");
  if (!task.contains("type")) {
    return Error(type_path, "is missing; expected \"chief\", \"worker\" or \"evaluator\"");
  }
  const Json& type_json = task.at("type");
  if (!type_json.is_string()) {
    return Error(type_path, absl::StrCat("expected a string, got ", Describe(type_json)));
  }
  const std::string type_name = type_json.get<std::string>();
  std::optional<JobName> job = ClassifyJob(type_name);
  if (!job) {
    return Error(type_path, absl::StrCat("unknown task type \"", absl::CHexEscape(type_name),
                                         "\"; expected \"chief\", \"worker\" or "
                                         "\"evaluator\""));
  }
  if (job->is_ps) return Error(type_path, absl::StrCat("\"ps\": ", kPsRefusal));
  const std::string index_path = absl::StrCat(task_path, ".index");
  int64_t index = 0;  // TF's default when "index" is absent.
  if (task.contains("index")) {
    RW_ASSIGN_OR_RETURN(index, ParseIndex(task.at("index"), index_path));
  }
  const std::vector<HostPort>& job_tasks = spec.Job(job->type);
  if (job_tasks.empty()) {
    // TF allows an evaluator that is not listed in the cluster.
    if (job->type == TaskType::kEvaluator) {
      if (index != 0) {
        return Error(index_path, absl::StrCat(index,
                                              " is out of range; there is at "
                                              "most one evaluator (index 0)"));
      }
      return TaskId{TaskType::kEvaluator, 0};
    }
    return Error(type_path, absl::StrCat("\"", type_name, "\" has no job in TF_CONFIG.cluster"));
  }
  if (index >= static_cast<int64_t>(job_tasks.size())) {
    return Error(index_path,
                 absl::StrCat(index, " is out of range; job \"", type_name, "\" has ",
                              job_tasks.size(), job_tasks.size() == 1 ? " task" : " tasks",
                              " (indices 0..", job_tasks.size() - 1, ")"));
  }
  return TaskId{job->type, static_cast<int>(index)};
}

}  // namespace

absl::StatusOr<ClusterConfig> ParseTfConfig(absl::string_view json, absl::string_view source) {
  if (json.size() > kMaxTfConfigBytes) {
    return Error(kRoot, absl::StrCat("is ", json.size(), " bytes; the limit is ", kMaxTfConfigBytes,
                                     " bytes"));
  }
  if (absl::StripAsciiWhitespace(json).empty()) {
    RW_LOG(INFO) << source << " is empty: running in single-worker local mode";
    return ClusterConfig::Local(absl::StrCat("local (", source, " empty)"));
  }
  Json root;
  try {
    root = Json::parse(json.begin(), json.end());
  } catch (const Json::parse_error& e) {
    // nlohmann's message ends with the lexer's complaint; keep the byte offset first.
    std::string what = e.what();
    const size_t detail = what.find("error while parsing");
    if (detail != std::string::npos) what = what.substr(detail);
    return Error(kRoot,
                 absl::StrCat("is not valid JSON: syntax error at byte ", e.byte, ": ", what));
  } catch (const Json::exception& e) {
    // Found by tests/fuzz/tf_config_fuzzer: a number too large for a double
    // ("1e999999") is an out_of_range error, not a parse_error.
    return Error(kRoot, absl::StrCat("is not valid JSON: ", e.what()));
  }
  if (!root.is_object()) {
    return Error(kRoot, absl::StrCat("expected a JSON object with \"cluster\" and "
                                     "\"task\", got ",
                                     Describe(root)));
  }
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string& key = it.key();
    if (key != "cluster" && key != "task" && key != "rpc_layer" && key != "environment") {
      RW_LOG(WARNING) << kRoot << "." << key
                      << ": unknown key ignored (TF_CONFIG uses cluster, task, "
                         "rpc_layer and environment)";
    }
  }
  if (root.contains("rpc_layer")) {
    const Json& rpc = root.at("rpc_layer");
    const std::string path = absl::StrCat(kRoot, ".rpc_layer");
    if (!rpc.is_string()) {
      return Error(path, absl::StrCat("expected the string \"grpc\", got ", Describe(rpc)));
    }
    if (rpc.get<std::string>() != "grpc") {
      return Error(path, absl::StrCat("\"", absl::CHexEscape(rpc.get<std::string>()),
                                      "\" is not supported; Ringwork speaks only "
                                      "\"grpc\""));
    }
  }
  const bool no_cluster =
      !root.contains("cluster") || (root.at("cluster").is_object() && root.at("cluster").empty());
  if (no_cluster) {
    RW_LOG(INFO) << source << " has no cluster: running in single-worker local mode";
    return ClusterConfig::Local(absl::StrCat("local (", source, " has no cluster)"));
  }
  RW_ASSIGN_OR_RETURN(ClusterSpec spec, ParseCluster(root.at("cluster")));
  RW_ASSIGN_OR_RETURN(TaskId task, ParseTask(root, spec));
  return ClusterConfig(std::move(spec), task, std::string(source));
}

std::string ToTfConfigJson(const ClusterConfig& config) {
  if (config.local_mode()) return "{}";
  Json cluster = Json::object();
  for (TaskType type : {TaskType::kChief, TaskType::kWorker, TaskType::kEvaluator}) {
    const std::vector<HostPort>& job = config.spec().Job(type);
    if (job.empty()) continue;
    Json list = Json::array();
    for (const HostPort& a : job) list.push_back(a.ToString());
    cluster[std::string(TaskTypeName(type))] = list;
  }
  Json root = {
      {"cluster", cluster},
      {"task",
       {{"type", std::string(TaskTypeName(config.task().type))}, {"index", config.task().index}}}};
  return root.dump();
}

}  // namespace ringwork
