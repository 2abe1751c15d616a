#include "keras/functional.h"

#include "absl/strings/str_cat.h"

namespace ringwork {

// Node 0.. in the order of the calls; an Input node has no layer.
struct FunctionalGraph {
  struct Node {
    std::unique_ptr<Layer> layer;
    std::vector<int> inputs;  // Nodes.
    Shape input_shape;        // Input nodes.
  };
  std::vector<Node> nodes;
  absl::Status error;  // The first misuse, reported when a model is made.
  bool taken = false;  // Its layers went to a model.
};

SymbolicTensor Input(Shape shape) {
  auto graph = std::make_shared<FunctionalGraph>();
  graph->nodes.push_back({nullptr, {}, std::move(shape)});
  return SymbolicTensor(graph, 0);
}

SymbolicTensor Apply(std::unique_ptr<Layer> layer, const SymbolicTensor& x) {
  return Apply(std::move(layer), std::vector<SymbolicTensor>{x});
}

SymbolicTensor Apply(std::unique_ptr<Layer> layer, const std::vector<SymbolicTensor>& xs) {
  std::shared_ptr<FunctionalGraph> graph = xs.empty() ? std::make_shared<FunctionalGraph>() : xs[0].graph();
  auto misuse = [&](const std::string& what) {
    if (graph->error.ok()) graph->error = absl::InvalidArgumentError(what);
  };
  const std::string name = absl::StrCat(layer->name().empty() ? "" : layer->name() + " ", "(", layer->type(), ")");
  if (xs.empty()) misuse(absl::StrCat("a layer ", name, " was called on no tensor"));
  for (const SymbolicTensor& x : xs) {
    if (x.graph() != graph) {
      misuse(absl::StrCat("the layer ", name, " was called on tensors of different Input() calls: a model has one input"));
    }
  }
  if (layer->merges() && xs.size() < 2) {
    misuse(absl::StrCat("the merge layer ", name, " needs 2 or more tensors, got ", xs.size()));
  }
  if (!layer->merges() && xs.size() != 1) {
    misuse(absl::StrCat("the layer ", name, " takes one tensor, got ", xs.size()));
  }
  if (graph->taken) misuse("a layer was called on a tensor whose graph already became a Model");
  std::vector<int> inputs;
  for (const SymbolicTensor& x : xs) inputs.push_back(x.node());
  graph->nodes.push_back({std::move(layer), std::move(inputs), {}});
  return SymbolicTensor(graph, static_cast<int>(graph->nodes.size()) - 1);
}

Model::Model(const SymbolicTensor& inputs, const SymbolicTensor& outputs) {
  set_model_name("model");
  set_definition_error(TakeLayers(inputs, outputs));
}

absl::Status Model::TakeLayers(const SymbolicTensor& inputs, const SymbolicTensor& outputs) {
  FunctionalGraph& graph = *outputs.graph();
  auto fail = [](const std::string& what) { return absl::InvalidArgumentError(what); };
  if (!graph.error.ok()) return graph.error;
  if (inputs.graph() != outputs.graph()) return fail("the model's outputs do not come from its inputs");
  if (graph.taken) return fail("the layers of this graph already belong to another Model");
  if (graph.nodes[inputs.node()].layer != nullptr) return fail("the model's inputs must be an Input() tensor");
  if (outputs.node() == inputs.node()) return fail("the model has no layers between its inputs and outputs");
  // Every node the output depends on, found backwards; calls come in an order
  // where inputs are made first, so that order is a topological one.
  std::vector<char> needed(graph.nodes.size(), 0);
  needed[outputs.node()] = 1;
  for (int n = outputs.node(); n >= 0; --n) {
    if (!needed[n]) continue;
    for (int in : graph.nodes[n].inputs) needed[in] = 1;
  }
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (needed[n] && graph.nodes[n].layer == nullptr && static_cast<int>(n) != inputs.node()) {
      return fail("the model's outputs depend on an Input() other than its inputs");
    }
  }
  if (!needed[inputs.node()]) return fail("the model's outputs do not depend on its inputs");
  // Nodes become layers; activation 0 is the input, i + 1 the i-th layer's output.
  std::vector<int> activation(graph.nodes.size(), -1);
  activation[inputs.node()] = 0;
  int layers = 0;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (!needed[n] || graph.nodes[n].layer == nullptr) continue;
    std::vector<int> reads;
    for (int in : graph.nodes[n].inputs) reads.push_back(activation[in]);
    AddNode(std::move(graph.nodes[n].layer), std::move(reads));
    activation[n] = ++layers;
  }
  graph.taken = true;
  DeclareInput(graph.nodes[inputs.node()].input_shape);
  return absl::OkStatus();
}

}  // namespace ringwork
