#include "keras/tfjs_export.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "base/atomic_file.h"
#include "base/status_macros.h"
#include "keras/keras_graph.h"

namespace ringwork {
namespace {

constexpr char kShard[] = "group1-shard1of1.bin";

}  // namespace

absl::StatusOr<TfjsArtifacts> TfjsModel(const Model& model) {
  RW_ASSIGN_OR_RETURN(KerasGraph graph, KerasGraphOf(model, "TF.js export"));
  nlohmann::json layers = nlohmann::json::array();
  nlohmann::json manifest = nlohmann::json::array();
  TfjsArtifacts out;
  for (const KerasNode& node : graph.nodes) {
    if (node.class_name == "Normalization" || node.class_name == "Discretization" ||
        node.class_name == "IntegerLookup") {
      return absl::InvalidArgumentError(
          absl::StrCat("TF.js export: layer ", node.name, " is a ", node.class_name,
                       ", which TF.js lacks (a .keras archive takes it)"));
    }
    const bool masked =
        node.masked_input || std::any_of(node.later_calls.begin(), node.later_calls.end(),
                                         [](const KerasCall& c) { return c.masked_input; });
    if (masked && (node.class_name == "GlobalAveragePooling1D" || node.class_name == "Add" ||
                   node.class_name == "Multiply")) {
      // TF.js' pools refuse masks, and its Add and Multiply keep the first input's.
      return absl::InvalidArgumentError(
          absl::StrCat("TF.js export: layer ", node.name, " (", node.class_name,
                       ") reads a mask, which TF.js' ", node.class_name, " does not honour"));
    }
    if (node.class_name == "GRU" && node.config.value("reset_after", false)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "TF.js export: layer ", node.name,
          " is a GRU with reset_after=true, which TF.js' GRU lacks (make it with "
          "{.reset_after = false} to export it to TF.js; ONNX and Keras take either)"));
    }
    // One list per call: tf.keras 2's [[name, node, 0, {}], ...].
    nlohmann::json inbound_nodes = nlohmann::json::array();
    auto add_call = [&](const std::vector<std::string>& inbound) {
      nlohmann::json call = nlohmann::json::array();
      for (const std::string& from : inbound) {
        const auto [layer, index] = graph.History(from);
        call.push_back({layer, index, 0, nlohmann::json::object()});
      }
      inbound_nodes.push_back(std::move(call));
    };
    if (!node.inbound.empty()) add_call(node.inbound);
    for (const KerasCall& later : node.later_calls) add_call(later.inbound);
    // TF.js spells LeCun's initializers LeCunNormal and LeCunUniform.
    nlohmann::json config = node.config;
    for (auto& [key, value] : config.items()) {
      if (!value.is_object() || !value.contains("class_name")) continue;
      if (value["class_name"] == "LecunNormal") value["class_name"] = "LeCunNormal";
      if (value["class_name"] == "LecunUniform") value["class_name"] = "LeCunUniform";
    }
    layers.push_back({{"class_name", node.class_name},
                      {"name", node.name},
                      {"config", config},
                      {"inbound_nodes", inbound_nodes}});
    for (const Variable* v : node.weights) {
      nlohmann::json shape = nlohmann::json::array();
      for (int64_t d : v->value.shape()) shape.push_back(d);
      manifest.push_back({{"name", v->name}, {"shape", shape}, {"dtype", "float32"}});
      out.weights.append(reinterpret_cast<const char*>(v->value.data()),
                         sizeof(float) * static_cast<size_t>(v->size()));
    }
  }
  nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array();
  for (const std::string& i : graph.inputs) inputs.push_back({i, 0, 0});
  for (const std::string& o : graph.outputs) {
    const auto [layer, index] = graph.History(o);
    outputs.push_back({layer, index, 0});
  }
  const nlohmann::json topology = {{"class_name", "Model"},
                                   {"config",
                                    {{"name", graph.name},
                                     {"layers", layers},
                                     {"input_layers", inputs},
                                     {"output_layers", outputs}}},
                                   {"keras_version", "2.15.0"},
                                   {"backend", "tensorflow"}};
  const nlohmann::json model_json = {
      {"format", "layers-model"},
      {"generatedBy", "ringwork"},
      {"convertedBy", nullptr},
      {"modelTopology", topology},
      {"weightsManifest", {{{"paths", {kShard}}, {"weights", manifest}}}}};
  out.model_json = model_json.dump();
  return out;
}

absl::Status ExportTfjs(const Model& model, const std::string& dir) {
  absl::Status written;
  if (model.strategy()->is_chief()) {
    absl::StatusOr<TfjsArtifacts> artifacts = TfjsModel(model);
    written = artifacts.status();
    std::error_code error;
    if (written.ok() && !std::filesystem::create_directories(dir, error) && error) {
      written = absl::InvalidArgumentError(
          absl::StrCat("TF.js export: cannot make ", dir, ": ", error.message()));
    }
    // The weights before the model.json that names them.
    if (written.ok()) {
      written = WriteFileAtomically(dir + "/" + kShard, artifacts->weights, "TF.js export");
    }
    if (written.ok()) {
      written = WriteFileAtomically(dir + "/model.json", artifacts->model_json, "TF.js export");
    }
  }
  return model.strategy()->ShareChiefStatus(written);
}

}  // namespace ringwork
