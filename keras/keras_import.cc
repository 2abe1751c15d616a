#include "keras/keras_import.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "keras/keras_layer_config.h"

namespace ringwork {
namespace {

using Json = nlohmann::json;

absl::Status Refuse(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

// An example's shape from an InputLayer's (or a Sequential's first layer's) config.
absl::StatusOr<Shape> InputShape(const Json& config, const std::string& path) {
  const char* key = config.contains("batch_input_shape") ? "batch_input_shape" : "batch_shape";
  if (!config.contains(key) || !config[key].is_array() || config[key].empty()) {
    return Refuse(path, "no batch_input_shape (or batch_shape): the input's shape is unknown");
  }
  Shape shape;
  for (size_t i = 1; i < config[key].size(); ++i) {
    if (!config[key][i].is_number_integer() || config[key][i].get<int64_t>() <= 0) {
      return Refuse(absl::StrCat(path, ".", key),
                    "every dimension but the batch's must be a known size");
    }
    shape.push_back(config[key][i].get<int64_t>());
  }
  return shape;
}

// A tensor a layer reads: the output of call `node` of layer `layer` (a shared
// layer's calls are its nodes 0, 1, ...).
struct TensorRef {
  std::string layer;
  int node = 0;
  bool operator<(const TensorRef& o) const {
    return layer != o.layer ? layer < o.layer : node < o.node;
  }
};

absl::StatusOr<TensorRef> RefOf(const Json& history, const std::string& at) {
  if (!history.is_array() || history.empty() || !history[0].is_string()) {
    return Refuse(at, history.dump());
  }
  TensorRef ref{history[0].get<std::string>()};
  if (history.size() > 1 && history[1].is_number_integer()) ref.node = history[1].get<int>();
  if (history.size() > 2 && history[2].is_number_integer() && history[2].get<int>() != 0) {
    return Refuse(at, absl::StrCat("reads output ", history[2].get<int>(), " of ", ref.layer,
                                   ", a layer of one output"));
  }
  return ref;
}

// What each call of a functional layer reads: tf.keras 2's and TF.js'
// [[[name, node, 0, {}], ...], ...] or Keras 3's
// [{"args": [{"class_name": "__keras_tensor__", ...keras_history}]}, ...].
absl::StatusOr<std::vector<std::vector<TensorRef>>> Inbound(const Json& layer,
                                                            const std::string& path) {
  const std::string at = path + ".inbound_nodes";
  if (!layer.contains("inbound_nodes") || !layer["inbound_nodes"].is_array() ||
      layer["inbound_nodes"].empty()) {
    return Refuse(at, "the layer is never called");
  }
  std::vector<std::vector<TensorRef>> calls;
  for (const Json& node : layer["inbound_nodes"]) {
    std::vector<TensorRef> refs;
    if (node.is_array()) {
      for (const Json& t : node) {
        RW_ASSIGN_OR_RETURN(TensorRef ref, RefOf(t, at));
        refs.push_back(std::move(ref));
      }
    } else if (node.is_object() && node.contains("args")) {
      std::vector<const Json*> pending = {&node["args"]};
      while (!pending.empty()) {
        const Json& a = *pending.back();
        pending.pop_back();
        if (a.is_array()) {
          for (auto it = a.rbegin(); it != a.rend(); ++it) pending.push_back(&*it);
        } else if (a.is_object() && a.value("class_name", "") == "__keras_tensor__") {
          RW_ASSIGN_OR_RETURN(
              TensorRef ref,
              RefOf(a.value("config", Json::object()).value("keras_history", Json()), at));
          refs.push_back(std::move(ref));
        }
      }
    } else {
      return Refuse(at, node.dump());
    }
    if (refs.empty()) return Refuse(at, "reads nothing");
    calls.push_back(std::move(refs));
  }
  return calls;
}

// input_layers / output_layers: [[name, node, 0], ...], or one [name, node, 0].
std::vector<TensorRef> Endpoints(const Json& v) {
  auto ref = [](const Json& e) {
    TensorRef r{e[0].get<std::string>()};
    if (e.size() > 1 && e[1].is_number_integer()) r.node = e[1].get<int>();
    return r;
  };
  if (v.is_array() && !v.empty() && v[0].is_string()) return {ref(v)};
  std::vector<TensorRef> refs;
  if (v.is_array()) {
    for (const Json& e : v) {
      if (e.is_array() && !e.empty() && e[0].is_string()) refs.push_back(ref(e));
    }
  }
  return refs;
}

absl::StatusOr<Model> SequentialFromJson(const Json& config, const std::string& path) {
  const bool bare = config.is_array();  // tf.keras 1's config: the list itself.
  const Json& layers = bare ? config : config.value("layers", Json());
  const std::string at = path + (bare ? ".config" : ".config.layers");
  if (!layers.is_array() || layers.empty()) return Refuse(at, "no layers");
  std::optional<SymbolicTensor> x, y;
  for (size_t i = 0; i < layers.size(); ++i) {
    const Json& l = layers[i];
    const std::string p = absl::StrCat(at, "[", i, "]");
    const std::string type = l.value("class_name", "");
    const Json config_of = l.value("config", Json::object());
    if (type == "InputLayer") {
      if (x.has_value()) return Refuse(p, "a second InputLayer");
      RW_ASSIGN_OR_RETURN(const Shape shape, InputShape(config_of, p + ".config"));
      x = y = Input(shape, config_of.value("name", ""));
      continue;
    }
    if (!x.has_value()) {  // tf.keras 2: the first layer holds the input's shape.
      RW_ASSIGN_OR_RETURN(const Shape shape, InputShape(config_of, p + ".config"));
      x = y = Input(shape);
    }
    RW_ASSIGN_OR_RETURN(std::unique_ptr<Layer> layer, LayerFromKerasConfig(type, config_of, p));
    y = Apply(std::move(layer), *y);
  }
  if (y->node() == x->node()) return Refuse(at, "no layers after the input");
  return Model(*x, *y);
}

// A layer of a functional config with its calls, made as their inputs are.
struct PendingLayer {
  std::string type, name, path;
  Json config;
  std::vector<std::vector<TensorRef>> calls;
  size_t made = 0;                    // Calls made so far.
  std::optional<SharedLayer> shared;  // A layer called more than once.
};

// Makes `layer`'s next call on `xs`. A layer of several calls is shared; a merge
// layer (no weights) is made again for each. `names`: the layers' names so far.
absl::StatusOr<SymbolicTensor> MakeCall(PendingLayer& layer, const std::vector<SymbolicTensor>& xs,
                                        std::set<std::string>& names) {
  const int call = static_cast<int>(layer.made);
  if (layer.calls.size() == 1 || IsMergeLayerClass(layer.type)) {
    // A merge layer's later calls are layers of their own: NAME_1, ... (a name
    // TF.js accepts), unless a layer of the config has it.
    std::string name = layer.name;
    for (int n = call; n > 0 && names.count(name) > 0; ++n) name = absl::StrCat(layer.name, "_", n);
    names.insert(name);
    RW_ASSIGN_OR_RETURN(std::unique_ptr<Layer> made,
                        LayerFromKerasConfig(layer.type, layer.config, layer.path, name));
    return xs.size() == 1 ? Apply(std::move(made), xs[0]) : Apply(std::move(made), xs);
  }
  if (xs.size() != 1) {
    return Refuse(layer.path + ".inbound_nodes", "a shared layer of several inputs");
  }
  if (!layer.shared.has_value()) {
    RW_ASSIGN_OR_RETURN(std::unique_ptr<Layer> made,
                        LayerFromKerasConfig(layer.type, layer.config, layer.path, layer.name));
    layer.shared = Share(std::move(made));
  }
  return Apply(*layer.shared, xs[0]);
}

absl::StatusOr<Model> FunctionalFromJson(const Json& config, const std::string& path) {
  const std::string at = path + ".config.layers";
  const Json layers = config.value("layers", Json());
  if (!layers.is_array()) return Refuse(at, "no layers");
  std::map<TensorRef, SymbolicTensor> made;
  std::set<std::string> names;
  std::vector<PendingLayer> pending;
  for (size_t i = 0; i < layers.size(); ++i) {
    const Json& l = layers[i];
    PendingLayer layer;
    layer.path = absl::StrCat(at, "[", i, "]");
    layer.type = l.value("class_name", "");
    layer.config = l.value("config", Json::object());
    layer.name = l.value("name", layer.config.value("name", ""));
    if (layer.name.empty() || !names.insert(layer.name).second) {
      return Refuse(layer.path, "a layer needs a name of its own");
    }
    if (layer.type == "InputLayer") {
      RW_ASSIGN_OR_RETURN(const Shape shape, InputShape(layer.config, layer.path + ".config"));
      made.emplace(TensorRef{layer.name}, Input(shape, layer.name));
      continue;
    }
    RW_ASSIGN_OR_RETURN(layer.calls, Inbound(l, layer.path));
    pending.push_back(std::move(layer));
  }
  // As Keras' from_config: a call is made once what it reads is (a shared layer's
  // later call may read a layer listed after it).
  for (bool progress = true; progress;) {
    progress = false;
    for (PendingLayer& layer : pending) {
      while (layer.made < layer.calls.size()) {
        std::vector<SymbolicTensor> xs;
        for (const TensorRef& r : layer.calls[layer.made]) {
          const auto it = made.find(r);
          if (it != made.end()) xs.push_back(it->second);
        }
        if (xs.size() < layer.calls[layer.made].size()) break;
        RW_ASSIGN_OR_RETURN(SymbolicTensor y, MakeCall(layer, xs, names));
        made.emplace(TensorRef{layer.name, static_cast<int>(layer.made++)}, std::move(y));
        progress = true;
      }
    }
  }
  for (const PendingLayer& layer : pending) {
    if (layer.made == layer.calls.size()) continue;
    for (const TensorRef& r : layer.calls[layer.made]) {
      if (made.count(r)) continue;
      return Refuse(layer.path + ".inbound_nodes",
                    absl::StrCat("reads call ", r.node, " of ", r.layer,
                                 ", which no layer makes (a cycle, or a missing layer)"));
    }
  }
  std::vector<SymbolicTensor> inputs, outputs;
  for (const auto& [key, into] :
       {std::pair{"input_layers", &inputs}, {"output_layers", &outputs}}) {
    for (const TensorRef& n : Endpoints(config.value(key, Json()))) {
      const auto it = made.find(n);
      if (it == made.end()) {
        return Refuse(absl::StrCat(path, ".config.", key),
                      absl::StrCat("names call ", n.node, " of ", n.layer));
      }
      into->push_back(it->second);
    }
    if (into->empty()) return Refuse(absl::StrCat(path, ".config.", key), "none");
  }
  return outputs.size() == 1 ? Model(inputs, outputs[0]) : Model(inputs, outputs);
}

absl::StatusOr<Model> ParseModel(const std::string& json_text) {
  Json j = Json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Refuse("$", "not a JSON object");
  std::string path = "$";
  if (j.contains("modelTopology")) {  // TF.js' model.json.
    j = Json(j["modelTopology"]);
    path = "$.modelTopology";
  }
  if (j.contains("model_config") && j["model_config"].is_object()) {  // Keras' HDF5 attribute.
    j = Json(j["model_config"]);
    path += ".model_config";
  }
  const std::string type = j.value("class_name", "");
  const Json config = j.value("config", Json());
  if (type == "Sequential") return SequentialFromJson(config, path);
  if (type == "Model" || type == "Functional") return FunctionalFromJson(config, path);
  return Refuse(path + ".class_name",
                absl::StrCat("\"", type, "\" is not a Sequential or Functional model"));
}

}  // namespace

absl::StatusOr<Model> ModelFromKerasJson(const std::string& json_text) {
  try {
    return ParseModel(json_text);
  } catch (const Json::exception& e) {  // A value of another type than Keras writes.
    return Refuse("$", absl::StrCat("not a Keras model's JSON: ", e.what()));
  }
}

}  // namespace ringwork
