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

// The layers a functional layer reads: tf.keras 2's [[[name, 0, 0, {}], ...]] or
// Keras 3's [{"args": [{"class_name": "__keras_tensor__", ...keras_history}]}].
absl::StatusOr<std::vector<std::string>> Inbound(const Json& layer, const std::string& path) {
  const std::string at = path + ".inbound_nodes";
  if (!layer.contains("inbound_nodes") || !layer["inbound_nodes"].is_array() ||
      layer["inbound_nodes"].size() != 1) {
    return Refuse(at, "a layer is called once (no shared layers)");
  }
  const Json& node = layer["inbound_nodes"][0];
  std::vector<std::string> names;
  if (node.is_array()) {
    for (const Json& t : node) {
      if (!t.is_array() || t.empty() || !t[0].is_string()) return Refuse(at, t.dump());
      names.push_back(t[0].get<std::string>());
    }
  } else if (node.is_object() && node.contains("args")) {
    std::vector<const Json*> pending = {&node["args"]};
    while (!pending.empty()) {
      const Json& a = *pending.back();
      pending.pop_back();
      if (a.is_array()) {
        for (auto it = a.rbegin(); it != a.rend(); ++it) pending.push_back(&*it);
      } else if (a.is_object() && a.value("class_name", "") == "__keras_tensor__") {
        const Json history = a.value("config", Json::object()).value("keras_history", Json());
        if (!history.is_array() || history.empty() || !history[0].is_string()) {
          return Refuse(at, a.dump());
        }
        names.push_back(history[0].get<std::string>());
      }
    }
  } else {
    return Refuse(at, node.dump());
  }
  if (names.empty()) return Refuse(at, "reads nothing");
  return names;
}

// input_layers / output_layers: [[name, 0, 0], ...], or one [name, 0, 0].
std::vector<std::string> Endpoints(const Json& v) {
  std::vector<std::string> names;
  if (v.is_array() && !v.empty() && v[0].is_string()) return {v[0].get<std::string>()};
  if (v.is_array()) {
    for (const Json& e : v) {
      if (e.is_array() && !e.empty() && e[0].is_string()) names.push_back(e[0].get<std::string>());
    }
  }
  return names;
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

absl::StatusOr<Model> FunctionalFromJson(const Json& config, const std::string& path) {
  const std::string at = path + ".config.layers";
  const Json layers = config.value("layers", Json());
  if (!layers.is_array()) return Refuse(at, "no layers");
  std::map<std::string, SymbolicTensor> made;
  for (size_t i = 0; i < layers.size(); ++i) {
    const Json& l = layers[i];
    const std::string p = absl::StrCat(at, "[", i, "]");
    const std::string type = l.value("class_name", "");
    const Json config_of = l.value("config", Json::object());
    const std::string name = l.value("name", config_of.value("name", ""));
    if (name.empty() || made.count(name)) return Refuse(p, "a layer needs a name of its own");
    if (type == "InputLayer") {
      RW_ASSIGN_OR_RETURN(const Shape shape, InputShape(config_of, p + ".config"));
      made.emplace(name, Input(shape, name));
      continue;
    }
    RW_ASSIGN_OR_RETURN(const std::vector<std::string> reads, Inbound(l, p));
    std::vector<SymbolicTensor> xs;
    for (const std::string& r : reads) {
      const auto it = made.find(r);
      if (it == made.end()) {
        return Refuse(p + ".inbound_nodes",
                      absl::StrCat("reads ", r, ", which no layer before it makes"));
      }
      xs.push_back(it->second);
    }
    RW_ASSIGN_OR_RETURN(std::unique_ptr<Layer> layer,
                        LayerFromKerasConfig(type, config_of, p, name));
    made.emplace(name,
                 xs.size() == 1 ? Apply(std::move(layer), xs[0]) : Apply(std::move(layer), xs));
  }
  std::vector<SymbolicTensor> inputs, outputs;
  for (const auto& [key, into] :
       {std::pair{"input_layers", &inputs}, {"output_layers", &outputs}}) {
    for (const std::string& n : Endpoints(config.value(key, Json()))) {
      const auto it = made.find(n);
      if (it == made.end()) return Refuse(absl::StrCat(path, ".config.", key), "names " + n);
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
