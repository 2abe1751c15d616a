#include "keras/keras_graph.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "keras/custom_objects.h"
#include "keras/shared_layer_call.h"

namespace ringwork {
namespace {

// Ringwork's layer type -> Keras' class.
const std::map<std::string, std::string>& KerasClasses() {
  static const auto* classes = new std::map<std::string, std::string>{
      {"Dense", "Dense"},
      {"Conv2D", "Conv2D"},
      {"MaxPooling2D", "MaxPooling2D"},
      {"AveragePooling2D", "AveragePooling2D"},
      {"GlobalAveragePooling2D", "GlobalAveragePooling2D"},
      {"Conv1D", "Conv1D"},
      {"LSTM", "LSTM"},
      {"GRU", "GRU"},
      {"SimpleRNN", "SimpleRNN"},
      {"Bidirectional", "Bidirectional"},
      {"TimeDistributed", "TimeDistributed"},
      {"MaxPooling1D", "MaxPooling1D"},
      {"AveragePooling1D", "AveragePooling1D"},
      {"GlobalAveragePooling1D", "GlobalAveragePooling1D"},
      {"GlobalMaxPooling1D", "GlobalMaxPooling1D"},
      {"GlobalMaxPooling2D", "GlobalMaxPooling2D"},
      {"BatchNormalization", "BatchNormalization"},
      {"SyncBatchNormalization", "BatchNormalization"},
      {"LayerNormalization", "LayerNormalization"},
      {"Embedding", "Embedding"},
      {"Activation", "Activation"},
      {"Flatten", "Flatten"},
      {"Reshape", "Reshape"},
      {"Dropout", "Dropout"},
      {"Masking", "Masking"},
      {"Add", "Add"},
      {"Multiply", "Multiply"},
      {"Concatenate", "Concatenate"},
      {"Normalization", "Normalization"},
      {"Discretization", "Discretization"},
      {"CategoryEncoding", "CategoryEncoding"},
      {"IntegerLookup", "IntegerLookup"},
  };
  return *classes;
}

nlohmann::json BaseConfig(const std::string& name) {
  return {{"name", name}, {"trainable", true}, {"dtype", "float32"}};
}

// Keras 3's layer order (keras/src/ops/function.py, map_graph): by depth, the
// longest path to an output, deepest first; within a depth, in the order a
// depth-first walk from the outputs, each node's inputs in order, first meets
// them. Keras numbers the layers' weights in this order (dense, dense_1, ...).
void SortAsKeras(KerasGraph& graph) {
  // Keras walks calls (its nodes): a layer's first by the layer's name, a shared
  // layer's later ones by theirs ("dense@1"). A layer's depth is its deepest call's.
  struct Call {
    size_t layer;
    const std::vector<std::string>* inbound;
  };
  std::map<std::string, Call> calls;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    calls[graph.nodes[i].name] = {i, &graph.nodes[i].inbound};
  }
  for (const auto& [name, history] : graph.calls) {
    const size_t layer = calls.at(history.first).layer;
    calls[name] = {layer, &graph.nodes[layer].later_calls[history.second - 1].inbound};
  }
  std::vector<int> met(graph.nodes.size(), -1);
  std::vector<std::string> finished;  // Inputs before what reads them.
  std::map<std::string, bool> done;
  int next = 0;
  auto walk = [&](auto&& self, const std::string& name) -> void {
    if (done[name]) return;
    const Call& call = calls.at(name);
    if (met[call.layer] < 0) met[call.layer] = next++;
    for (const std::string& from : *call.inbound) self(self, from);
    done[name] = true;
    finished.push_back(name);
  };
  for (const std::string& o : graph.outputs) walk(walk, o);
  std::map<std::string, int> call_depth;
  std::vector<int> depth(graph.nodes.size(), 0);
  std::vector<size_t> order;
  for (auto name = finished.rbegin(); name != finished.rend(); ++name) {
    const Call& call = calls.at(*name);
    const int d = std::max(call_depth[*name], depth[call.layer]);
    depth[call.layer] = d;
    for (const std::string& from : *call.inbound) {
      call_depth[from] = std::max(call_depth[from], d + 1);
    }
    if (std::find(order.begin(), order.end(), call.layer) == order.end()) {
      order.push_back(call.layer);
    }
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return depth[a] != depth[b] ? depth[a] > depth[b] : met[a] < met[b];
  });
  std::vector<KerasNode> sorted;
  for (size_t n : order) sorted.push_back(std::move(graph.nodes[n]));
  graph.nodes = std::move(sorted);
}

}  // namespace

std::pair<std::string, int> KerasGraph::History(const std::string& source) const {
  const auto call = calls.find(source);
  return call != calls.end() ? call->second : std::pair<std::string, int>{source, 0};
}

nlohmann::json KerasBatchShape(const Shape& shape) {
  nlohmann::json out = nlohmann::json::array({nullptr});
  for (int64_t d : shape) out.push_back(d);
  return out;
}

absl::StatusOr<KerasGraph> KerasGraphOf(const Model& model, const std::string& what) {
  if (!model.built()) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the model is not built (call Fit, Evaluate or Build first)"));
  }
  KerasGraph graph;
  graph.name = model.model_name_;
  // What each activation is (0: the input) by the Keras layer that gives it.
  std::vector<std::string> source(model.layers_.size() + 1);
  std::vector<Shape> shape(model.layers_.size() + 1);
  auto input_layer = [&](const std::string& name, const Shape& input_shape) {
    KerasNode input{"InputLayer", name, BaseConfig(name), {}, {}, input_shape, {}};
    input.config.erase("trainable");
    input.config["batch_input_shape"] = KerasBatchShape(input_shape);
    input.config["sparse"] = false;
    graph.nodes.push_back(std::move(input));
    graph.inputs.push_back(name);
  };
  // One input is activation 0; several are InputLayers that cut the flat example.
  const bool several = model.input_names_.size() > 1;
  source[0] = model.input_names_.empty() ? "input_1" : model.input_names_[0];
  shape[0] = model.input_shape_;
  if (!several) input_layer(source[0], shape[0]);
  for (size_t l = 0; l < model.layers_.size(); ++l) {
    const Layer& layer = *model.layers_[l];
    const std::string type = layer.type();
    const int first = model.inputs_[l][0];
    if (type == "InputLayer" && several) {
      input_layer(layer.name(), layer.output_shape());
      source[l + 1] = layer.name();
      shape[l + 1] = layer.output_shape();
      continue;
    }
    if (type == "RandomFlip") {  // Nothing in inference.
      source[l + 1] = source[static_cast<size_t>(first)];
      shape[l + 1] = shape[static_cast<size_t>(first)];
      continue;
    }
    if (const auto* call = dynamic_cast<const SharedLayerCall*>(&layer)) {
      const std::string& owner = call->owner().name();
      const auto node = std::find_if(graph.nodes.begin(), graph.nodes.end(),
                                     [&](const KerasNode& n) { return n.name == owner; });
      KerasCall later;
      for (int a : model.inputs_[l]) {
        later.inbound.push_back(source[static_cast<size_t>(a)]);
        later.inbound_shapes.push_back(shape[static_cast<size_t>(a)]);
      }
      if (node == graph.nodes.end()) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": layer ", layer.name(), " calls ",
                                                       owner, ", which is not exported"));
      }
      later.masked_input = model.masks_.MaskedInput(l);
      node->later_calls.push_back(std::move(later));
      graph.calls[layer.name()] = {owner, static_cast<int>(node->later_calls.size())};
      source[l + 1] = layer.name();
      shape[l + 1] = layer.output_shape();
      continue;
    }
    const auto keras = KerasClasses().find(type);
    const bool registered = FindLayer(type) != nullptr;  // A user's, under its own name.
    if (keras == KerasClasses().end() && !registered) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": layer ", layer.name(), " (", type,
                       ") is not exported (a layer of one's own is, once registered with "
                       "RegisterLayer)"));
    }
    KerasNode node{registered ? type : keras->second,
                   layer.name(),
                   BaseConfig(layer.name()),
                   {},
                   {},
                   layer.output_shape(),
                   {}};
    node.config.update(layer.keras_config());
    node.config["trainable"] = layer.trainable();
    node.masked_input = model.masks_.MaskedInput(l);
    if (type != "Dense" &&
        (type.find("Conv") != std::string::npos || type.find("Pooling") != std::string::npos)) {
      node.config["data_format"] = "channels_last";
    }
    for (int a : model.inputs_[l]) {
      node.inbound.push_back(source[static_cast<size_t>(a)]);
      node.inbound_shapes.push_back(shape[static_cast<size_t>(a)]);
    }
    if (type == "Dense" && node.inbound_shapes[0].size() > 1 && layer.output_shape().size() == 1) {
      // A Dense with flatten_input reads its input flat; Keras' acts on the last
      // axis: a Flatten first says the same thing in Keras.
      const std::string flat = layer.name() + "_flatten";
      graph.nodes.push_back({"Flatten",
                             flat,
                             BaseConfig(flat),
                             node.inbound,
                             node.inbound_shapes,
                             Shape{NumElements(node.inbound_shapes[0])},
                             {}});
      node.inbound = {flat};
      node.inbound_shapes = {graph.nodes.back().output_shape};
    }
    for (const Variable* v : layer.weights()) node.weights.push_back(v);
    source[l + 1] = layer.name();
    shape[l + 1] = layer.output_shape();
    graph.nodes.push_back(std::move(node));
  }
  for (int a : model.outputs_) graph.outputs.push_back(source[static_cast<size_t>(a)]);
  SortAsKeras(graph);
  return graph;
}

}  // namespace ringwork
