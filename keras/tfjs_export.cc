#include "keras/tfjs_export.h"

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "base/atomic_file.h"
#include "base/status_macros.h"

namespace ringwork {
namespace {

constexpr char kShard[] = "group1-shard1of1.bin";

// Ringwork's layer type -> the Keras class tf.js knows.
const std::map<std::string, std::string>& KerasClasses() {
  static const auto* classes = new std::map<std::string, std::string>{
      {"Dense", "Dense"},
      {"Conv2D", "Conv2D"},
      {"MaxPooling2D", "MaxPooling2D"},
      {"AveragePooling2D", "AveragePooling2D"},
      {"GlobalAveragePooling2D", "GlobalAveragePooling2D"},
      {"BatchNormalization", "BatchNormalization"},
      {"SyncBatchNormalization", "BatchNormalization"},
      {"LayerNormalization", "LayerNormalization"},
      {"Embedding", "Embedding"},
      {"Activation", "Activation"},
      {"Flatten", "Flatten"},
      {"Reshape", "Reshape"},
      {"Dropout", "Dropout"},
      {"Add", "Add"},
      {"Multiply", "Multiply"},
      {"Concatenate", "Concatenate"},
  };
  return *classes;
}

nlohmann::json BatchShape(const Shape& shape) {
  nlohmann::json out = nlohmann::json::array({nullptr});
  for (int64_t d : shape) out.push_back(d);
  return out;
}

}  // namespace

absl::StatusOr<TfjsArtifacts> TfjsModel(const Model& model) {
  if (!model.built()) {
    return absl::FailedPreconditionError(
        "cannot export a model that is not built (call Fit, Evaluate or Build first)");
  }
  // Layers by the Keras name of what each activation is (0: the input).
  std::vector<std::string> source(model.layers_.size() + 1);
  source[0] = model.input_names_.empty() ? "input_1" : model.input_names_[0];
  nlohmann::json layers = nlohmann::json::array();
  layers.push_back({{"class_name", "InputLayer"},
                    {"name", source[0]},
                    {"inbound_nodes", nlohmann::json::array()},
                    {"config",
                     {{"batch_input_shape", BatchShape(model.input_shape_)},
                      {"dtype", "float32"},
                      {"sparse", false},
                      {"name", source[0]}}}});
  nlohmann::json manifest = nlohmann::json::array();
  TfjsArtifacts out;
  for (size_t l = 0; l < model.layers_.size(); ++l) {
    const Layer& layer = *model.layers_[l];
    const std::string type = layer.type();
    if (type == "RandomFlip") {  // Nothing in inference.
      source[l + 1] = source[static_cast<size_t>(model.inputs_[l][0])];
      continue;
    }
    const auto keras = KerasClasses().find(type);
    if (keras == KerasClasses().end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("TF.js export: layer ", layer.name(), " (", type, ") is not exported",
                       type == "InputLayer" ? " (a model of several inputs)" : ""));
    }
    nlohmann::json config = layer.keras_config();
    config["name"] = layer.name();
    config["trainable"] = true;
    config["dtype"] = "float32";
    if (type == "Conv2D" || type == "MaxPooling2D" || type == "AveragePooling2D" ||
        type == "GlobalAveragePooling2D") {
      config["data_format"] = "channels_last";
    }
    if (type == "Conv2D") config["dilation_rate"] = {1, 1};
    nlohmann::json inbound = nlohmann::json::array();
    for (int a : model.inputs_[l]) {
      inbound.push_back({source[static_cast<size_t>(a)], 0, 0, nlohmann::json::object()});
    }
    const int first = model.inputs_[l][0];
    const Shape& in_shape = first == 0
                                ? model.input_shape_
                                : model.layers_[static_cast<size_t>(first - 1)]->output_shape();
    if (type == "Dense" && in_shape.size() > 1) {
      // Ringwork's Dense reads its input flat; Keras' acts on the last axis: a
      // Flatten first says the same thing in Keras.
      const std::string flat = layer.name() + "_flatten";
      layers.push_back({{"class_name", "Flatten"},
                        {"name", flat},
                        {"config", {{"name", flat}, {"trainable", true}, {"dtype", "float32"}}},
                        {"inbound_nodes", nlohmann::json::array({inbound})}});
      inbound = nlohmann::json::array({{flat, 0, 0, nlohmann::json::object()}});
    }
    layers.push_back({{"class_name", keras->second},
                      {"name", layer.name()},
                      {"config", config},
                      {"inbound_nodes", nlohmann::json::array({inbound})}});
    source[l + 1] = layer.name();
    for (const Variable* v : layer.weights()) {
      if (IsUnusedBias(layer, *v)) continue;  // Keras has none.
      nlohmann::json shape = nlohmann::json::array();
      for (int64_t d : v->value.shape()) shape.push_back(d);
      manifest.push_back({{"name", v->name}, {"shape", shape}, {"dtype", "float32"}});
      out.weights.append(reinterpret_cast<const char*>(v->value.data()),
                         sizeof(float) * static_cast<size_t>(v->size()));
    }
  }
  nlohmann::json outputs = nlohmann::json::array();
  for (int a : model.outputs_) outputs.push_back({source[static_cast<size_t>(a)], 0, 0});
  const nlohmann::json topology = {{"class_name", "Model"},
                                   {"config",
                                    {{"name", model.model_name_},
                                     {"layers", layers},
                                     {"input_layers", {{source[0], 0, 0}}},
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
