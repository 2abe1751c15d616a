// TF_CONFIG, with TensorFlow's exact schema and semantics, plus stricter checks.
//
//   TF_CONFIG='{"cluster": {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"]},
//               "task": {"type": "worker", "index": 1}}'
//   absl::StatusOr<ClusterConfig> c = ParseTfConfig(getenv("TF_CONFIG"), "TF_CONFIG");
//   // c->rank() == 2, c->world_size() == 3, c->is_chief() == false
//
// Schema: "cluster" maps job names ("chief", "worker", "evaluator"; "master" is an
// alias of "chief") to a list of "host:port" strings or to Kubeflow's sparse form
// {"0": "host:port", ...}; "task" has "type" and "index" (index defaults to 0, as in
// TF, and may be a decimal string); "rpc_layer" may only be "grpc"; "environment" is
// ignored; other top-level keys are ignored with a warning (cloud platforms add some).
// A TF_CONFIG without "cluster", or with an empty one, means local mode.
//
// Every error is INVALID_ARGUMENT (exit code 2) and starts with the JSON path of the
// offending value, e.g.  TF_CONFIG.cluster.worker[1]: "h1" has no port; ...
#ifndef RINGWORK_RUNTIME_CONFIG_TF_CONFIG_H_
#define RINGWORK_RUNTIME_CONFIG_TF_CONFIG_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/config/cluster_config.h"

namespace ringwork {

// TF_CONFIG values larger than this are refused before parsing.
inline constexpr size_t kMaxTfConfigBytes = 1 << 20;
// Jobs with more tasks than this are refused.
inline constexpr size_t kMaxTasksPerJob = 65536;

// Parses and validates `json`. `source` names where it came from, for the role table
// and for messages ("TF_CONFIG", "--tf_config_file=/etc/tf.json").
absl::StatusOr<ClusterConfig> ParseTfConfig(absl::string_view json,
                                            absl::string_view source = "TF_CONFIG");

// The TF_CONFIG that describes `config` (inverse of ParseTfConfig), compact JSON.
std::string ToTfConfigJson(const ClusterConfig& config);

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_CONFIG_TF_CONFIG_H_
