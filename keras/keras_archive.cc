#include "keras/keras_archive.h"

#include <nlohmann/json.hpp>
#include <regex>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "checkpoint/h5_file.h"
#include "checkpoint/zip_archive.h"
#include "keras/custom_objects.h"
#include "keras/keras_compile_config.h"
#include "keras/keras_graph.h"
#include "keras/keras_layer_config.h"

namespace ringwork {
namespace {

using Json = nlohmann::json;

Json KerasTensor(const KerasGraph& graph, const std::string& from, const Shape& shape) {
  const auto [layer, node] = graph.History(from);
  return {{"class_name", "__keras_tensor__"},
          {"config",
           {{"shape", KerasBatchShape(shape)},
            {"dtype", "float32"},
            {"keras_history", {layer, node, 0}}}}};
}

// A node in Keras 3's form: module, class_name, config (dtype as a DTypePolicy),
// build_config and inbound_nodes of keras tensors.
Json Keras3Layer(const KerasGraph& graph, const KerasNode& node) {
  Json config = node.config;
  // A user's layer as Keras 3 writes a registered one (package "Custom").
  const bool registered = FindLayer(node.class_name) != nullptr;
  Json layer = {{"module", registered ? Json(nullptr) : Json("keras.layers")},
                {"class_name", node.class_name},
                {"registered_name", registered ? Json("Custom>" + node.class_name) : Json(nullptr)},
                {"name", node.name}};
  if (node.class_name == "InputLayer") {
    config["batch_shape"] = config["batch_input_shape"];
    config.erase("batch_input_shape");
    layer["config"] = config;
    layer["inbound_nodes"] = Json::array();
    return layer;
  }
  config["dtype"] = {{"module", "keras"},
                     {"class_name", "DTypePolicy"},
                     {"config", {{"name", "float32"}}},
                     {"registered_name", nullptr}};
  layer["config"] = config;
  const bool merge = IsMergeLayerClass(node.class_name);
  // One entry per call (a shared layer's later calls after its first).
  std::vector<KerasCall> calls = {{node.inbound, node.inbound_shapes}};
  calls.insert(calls.end(), node.later_calls.begin(), node.later_calls.end());
  layer["inbound_nodes"] = Json::array();
  for (const KerasCall& call : calls) {
    Json tensors = Json::array();
    Json shapes = Json::array();
    for (size_t i = 0; i < call.inbound.size(); ++i) {
      tensors.push_back(KerasTensor(graph, call.inbound[i], call.inbound_shapes[i]));
      shapes.push_back(KerasBatchShape(call.inbound_shapes[i]));
    }
    if (!layer.contains("build_config")) {
      layer["build_config"] = {{"input_shape", merge ? shapes : shapes[0]}};
    }
    layer["inbound_nodes"].push_back(
        {{"args", merge ? Json::array({tensors}) : tensors}, {"kwargs", Json::object()}});
  }
  return layer;
}

// Each node's name in the weights file: its class in snake case, numbered.
std::vector<std::string> H5Names(const KerasGraph& graph) {
  std::map<std::string, int> used;
  std::vector<std::string> out;
  for (const KerasNode& node : graph.nodes) {
    std::string name = KerasSnakeCase(node.class_name);
    const int n = used[name]++;
    if (n > 0) name = absl::StrCat(name, "_", n);
    out.push_back(name);
  }
  return out;
}

}  // namespace

std::string KerasSnakeCase(const std::string& class_name) {
  static const std::regex non_word("[^A-Za-z0-9_]+");
  static const std::regex word("(.)([A-Z][a-z]+)");
  static const std::regex boundary("([a-z])([A-Z])");
  std::string s = std::regex_replace(class_name, non_word, "");
  s = std::regex_replace(s, word, "$1_$2");
  s = std::regex_replace(s, boundary, "$1_$2");
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

absl::StatusOr<std::string> KerasConfigJson(const Model& model) {
  RW_ASSIGN_OR_RETURN(KerasGraph graph, KerasGraphOf(model, "Keras export"));
  Json layers = Json::array();
  for (const KerasNode& node : graph.nodes) layers.push_back(Keras3Layer(graph, node));
  Json inputs = Json::array(), outputs = Json::array();
  for (const std::string& i : graph.inputs) inputs.push_back({i, 0, 0});
  for (const std::string& o : graph.outputs) {
    const auto [layer, node] = graph.History(o);
    outputs.push_back({layer, node, 0});
  }
  const Json config = {{"module", "keras.src.models.functional"},
                       {"class_name", "Functional"},
                       {"config",
                        {{"name", graph.name},
                         {"trainable", true},
                         {"layers", layers},
                         {"input_layers", inputs},
                         {"output_layers", outputs}}},
                       {"registered_name", "Functional"},
                       {"build_config", {{"input_shape", nullptr}}},
                       {"compile_config", KerasCompileConfig(model.compile_options())}};
  return config.dump();
}

// Where Keras 3 keeps a layer's variables: a recurrent layer's belong to its cell;
// a Bidirectional's to its forward_layer's cell, then its backward_layer's.
std::string VarsGroup(const KerasNode& node, const std::string& h5_name, size_t weight = 0) {
  if (node.class_name == "Bidirectional") {
    const bool forward = weight < node.weights.size() / 2;
    return absl::StrCat("layers/", h5_name, forward ? "/forward_layer" : "/backward_layer",
                        "/cell/vars");
  }
  // A TimeDistributed's are its layer's.
  const bool wrapped = node.class_name == "TimeDistributed";
  const std::string inner =
      wrapped ? node.config["layer"]["class_name"].get<std::string>() : node.class_name;
  const bool recurrent = inner == "LSTM" || inner == "GRU" || inner == "SimpleRNN";
  return absl::StrCat("layers/", h5_name, wrapped ? "/layer" : "",
                      recurrent ? "/cell/vars" : "/vars");
}

// Index of weight i in its group.
size_t IndexInGroup(const KerasNode& node, size_t i) {
  return node.class_name == "Bidirectional" ? i % (node.weights.size() / 2) : i;
}

absl::StatusOr<std::map<std::string, std::string>> KerasH5Layout(const Model& model) {
  RW_ASSIGN_OR_RETURN(KerasGraph graph, KerasGraphOf(model, "Keras weights"));
  const std::vector<std::string> names = H5Names(graph);
  std::map<std::string, std::string> layout;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const std::vector<const Variable*>& weights = graph.nodes[n].weights;
    for (size_t i = 0; i < weights.size(); ++i) {
      layout[absl::StrCat(VarsGroup(graph.nodes[n], names[n], i), "/",
                          IndexInGroup(graph.nodes[n], i))] = weights[i]->name;
    }
  }
  return layout;
}

absl::StatusOr<std::string> KerasWeightsH5(const Model& model) {
  RW_ASSIGN_OR_RETURN(KerasGraph graph, KerasGraphOf(model, "Keras weights"));
  const std::vector<std::string> names = H5Names(graph);
  std::vector<std::string> groups = {"vars"};  // The model's own (none).
  std::vector<NamedTensor> datasets;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const KerasNode& node = graph.nodes[n];
    groups.push_back(VarsGroup(node, names[n]));
    // A recurrent layer's own variables (none; its cell's are below it).
    groups.push_back(absl::StrCat("layers/", names[n], "/vars"));
    if (node.class_name == "TimeDistributed" &&
        VarsGroup(node, names[n]).find("/cell/") != std::string::npos) {
      groups.push_back(absl::StrCat("layers/", names[n], "/layer/vars"));  // The RNN's own.
    }
    if (node.class_name == "Bidirectional") {
      groups.push_back(VarsGroup(node, names[n], node.weights.size() / 2));
      for (const char* half : {"/forward_layer/vars", "/backward_layer/vars"}) {
        groups.push_back(absl::StrCat("layers/", names[n], half));
      }
    }
    const std::vector<const Variable*>& weights = node.weights;
    for (size_t i = 0; i < weights.size(); ++i) {
      const Variable& v = *weights[i];
      datasets.push_back({absl::StrCat(VarsGroup(node, names[n], i), "/", IndexInGroup(node, i)),
                          std::vector<int64_t>(v.value.shape().begin(), v.value.shape().end()),
                          std::vector<float>(v.value.data(), v.value.data() + v.size())});
    }
  }
  return H5FileImage(groups, datasets);
}

absl::Status SaveKerasArchive(const Model& model, const std::string& path) {
  absl::Status written;
  if (model.strategy()->is_chief()) {
    absl::StatusOr<std::string> config = KerasConfigJson(model);
    absl::StatusOr<std::string> weights =
        config.ok() ? KerasWeightsH5(model) : absl::StatusOr<std::string>(config.status());
    written = weights.status();
    if (written.ok()) {
      const Json metadata = {
          {"keras_version", "3.0.0"},
          {"date_saved", absl::FormatTime("%Y-%m-%d@%H:%M:%S", absl::Now(), absl::UTCTimeZone())},
          {"saved_by", "ringwork"}};
      written = WriteZipArchive({{"metadata.json", metadata.dump()},
                                 {"config.json", *config},
                                 {"model.weights.h5", *weights}},
                                path);
    }
    if (!written.ok())
      written = absl::Status(written.code(), absl::StrCat(path, ": ", written.message()));
  }
  return model.strategy()->ShareChiefStatus(written);
}

}  // namespace ringwork
