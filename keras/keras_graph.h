// A model as Keras describes it: its layers in Keras 3's order (by depth, as
// Keras' map_graph sorts them; it numbers weights by it), each with Keras' class,
// its config under Keras' argument names, the layers it reads and the variables
// Keras would give it. What the Keras-format writers (TF.js' model.json, Keras
// 3's config.json and .weights.h5) share.
//
//   RW_ASSIGN_OR_RETURN(KerasGraph graph, KerasGraphOf(model, "TF.js export"));
//   for (const KerasNode& node : graph.nodes) ...   // InputLayers first
//
// RandomFlip is left out (inference); SyncBatchNormalization is a
// BatchNormalization; a Dense that reads a rank > 1 input gets a Flatten before
// it (NAME_flatten), because Keras' Dense acts on the last axis only; a model of
// several inputs has an InputLayer for each; a shared layer is one node with
// its later calls (as Keras lists it once with several inbound nodes). Another layer is
// INVALID_ARGUMENT naming it after `what`.
#ifndef RINGWORK_KERAS_KERAS_GRAPH_H_
#define RINGWORK_KERAS_KERAS_GRAPH_H_

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "keras/model.h"

namespace ringwork {

// A later call of a shared layer (keras/functional.h): what it reads.
struct KerasCall {
  std::vector<std::string> inbound;
  std::vector<Shape> inbound_shapes;
  bool masked_input = false;
};

struct KerasNode {
  std::string class_name;  // Keras' ("BatchNormalization" for SyncBatchNormalization)
  std::string name;
  // name, trainable and dtype ("float32"), with the layer's own arguments.
  nlohmann::json config;
  std::vector<std::string> inbound;   // The layers it reads, by name.
  std::vector<Shape> inbound_shapes;  // Their outputs' shapes, without the batch.
  Shape output_shape;
  std::vector<const Variable*> weights;  // Keras' variables, in Keras' order.
  bool masked_input = false;             // An input carries a mask over steps.
  // A shared layer's calls after the first (its Keras nodes 1, 2, ...).
  std::vector<KerasCall> later_calls;
};

struct KerasGraph {
  std::string name;
  std::vector<KerasNode> nodes;
  std::vector<std::string> inputs;   // The InputLayers, in the model's input order.
  std::vector<std::string> outputs;  // The layers whose outputs the model gives.
  // What `inbound` and `outputs` name, as Keras' keras_history: (layer, node).
  // A layer is its node 0; a shared layer's later call ("dense@1") its node 1, ...
  std::pair<std::string, int> History(const std::string& source) const;
  std::map<std::string, std::pair<std::string, int>> calls;  // "dense@1" -> ("dense", 1).
};

absl::StatusOr<KerasGraph> KerasGraphOf(const Model& model, const std::string& what);

// Keras' [null, d1, d2, ...].
nlohmann::json KerasBatchShape(const Shape& shape);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_KERAS_GRAPH_H_
