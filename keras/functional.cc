#include "keras/functional.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "keras/model.h"
#include "keras/shared_layer_call.h"

namespace ringwork {

// Node 0.. in the order of the calls; an Input node has no layer. The Input()
// calls of one thread go into one graph until a model takes them (so a model
// may have several inputs); a model takes the layers it needs.
struct SharedLayerSlot {
  std::unique_ptr<Layer> layer;  // Until a model takes it.
  std::string description;       // "dense (Dense)", for messages.
  bool taken = false;
};

struct FunctionalGraph {
  struct Node {
    std::unique_ptr<Layer> layer;
    std::shared_ptr<SharedLayerSlot> shared;  // A shared layer's call (no `layer`).
    std::vector<int> inputs;                  // Nodes.
    bool is_input = false;
    Shape input_shape;  // Input nodes.
    std::string input_name;
    bool taken = false;  // Its layer (or, an Input, itself) went to a model.
    absl::Status error;  // A misuse in its call, reported by a model that needs it.
  };
  std::vector<Node> nodes;

  // Whether something in it may still become part of a model.
  bool pending() const {
    for (const Node& n : nodes) {
      if (!n.taken) return true;
    }
    return false;
  }
};

namespace {

thread_local std::shared_ptr<FunctionalGraph> open_graph;

// One of a model's several inputs, cut from the flat example: `size` values from
// `offset`, in `shape`.
class InputSliceLayer : public Layer {
 public:
  InputSliceLayer(int64_t offset, Shape shape) : offset_(offset), shape_(std::move(shape)) {}
  std::string type() const override { return "InputLayer"; }
  std::string config() const override {
    return absl::StrCat("values ", offset_, " to ", offset_ + NumElements(shape_));
  }
  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext&) override {
    width_ = NumElements(input);
    output_shape_ = shape_;
    return output_shape_;
  }
  absl::Status Forward(KernelContext&, const Tensor& x, Tensor* y, bool) override {
    const int64_t size = NumElements(shape_);
    y->Resize(WithBatch(x.dim(0), shape_));
    for (int64_t b = 0; b < x.dim(0); ++b) {
      std::memcpy(y->data() + b * size, x.data() + b * width_ + offset_, sizeof(float) * size);
    }
    return absl::OkStatus();
  }
  absl::Status Backward(KernelContext&, const Tensor& x, const Tensor&, const Tensor&,
                        Tensor* dx) override {
    if (dx == nullptr) return absl::OkStatus();  // The model's input: nothing below learns.
    dx->Resize(x.shape());
    std::fill(dx->data(), dx->data() + dx->size(), 0.f);
    return absl::OkStatus();
  }

 private:
  const int64_t offset_;
  const Shape shape_;
  int64_t width_ = 0;
};

}  // namespace

SymbolicTensor Input(Shape shape, std::string name) {
  if (open_graph == nullptr || !open_graph->pending())
    open_graph = std::make_shared<FunctionalGraph>();
  FunctionalGraph::Node node;
  node.is_input = true;
  node.input_shape = std::move(shape);
  node.input_name = std::move(name);
  open_graph->nodes.push_back(std::move(node));
  return SymbolicTensor(open_graph, static_cast<int>(open_graph->nodes.size()) - 1);
}

std::unique_ptr<Layer> Named(std::unique_ptr<Layer> layer, std::string name) {
  layer->set_name(std::move(name));
  return layer;
}

SharedLayer::SharedLayer(std::unique_ptr<Layer> layer)
    : slot_(std::make_shared<SharedLayerSlot>()) {
  slot_->description =
      absl::StrCat(layer->name().empty() ? "" : layer->name() + " ", "(", layer->type(), ")");
  slot_->layer = std::move(layer);
}

SharedLayer Share(std::unique_ptr<Layer> layer) { return SharedLayer(std::move(layer)); }

SymbolicTensor Apply(const SharedLayer& layer, const SymbolicTensor& x) {
  const std::shared_ptr<SharedLayerSlot>& slot = layer.slot();
  std::shared_ptr<FunctionalGraph> graph = x.graph();
  FunctionalGraph::Node node;
  node.shared = slot;
  node.inputs = {x.node()};
  auto misuse = [&](const std::string& what) {
    if (node.error.ok()) {
      node.error = absl::InvalidArgumentError(
          absl::StrCat("the shared layer ", slot->description, " ", what));
    }
  };
  if (slot->taken) misuse("already belongs to a Model: a new call cannot join it");
  if (slot->layer != nullptr && slot->layer->merges()) {
    misuse("has several inputs: a merge layer has no weights to share, call a new one");
  }
  if (graph->nodes[x.node()].taken && !graph->nodes[x.node()].is_input) {
    misuse("was called on a tensor whose layer already belongs to a Model");
  }
  graph->nodes.push_back(std::move(node));
  return SymbolicTensor(graph, static_cast<int>(graph->nodes.size()) - 1);
}

SymbolicTensor Apply(std::unique_ptr<Layer> layer, const SymbolicTensor& x) {
  return Apply(std::move(layer), std::vector<SymbolicTensor>{x});
}

SymbolicTensor Apply(std::unique_ptr<Layer> layer, const std::vector<SymbolicTensor>& xs) {
  std::shared_ptr<FunctionalGraph> graph =
      xs.empty() ? std::make_shared<FunctionalGraph>() : xs[0].graph();
  absl::Status error;
  auto misuse = [&](const std::string& what) {
    if (error.ok()) error = absl::InvalidArgumentError(what);
  };
  const std::string name =
      absl::StrCat(layer->name().empty() ? "" : layer->name() + " ", "(", layer->type(), ")");
  if (xs.empty()) misuse(absl::StrCat("a layer ", name, " was called on no tensor"));
  for (const SymbolicTensor& x : xs) {
    if (x.graph() != graph) {
      misuse(absl::StrCat(
          "the layer ", name,
          " was called on tensors of different graphs (Input() calls made on other threads, "
          "or before a Model took the tensors of the first)"));
    }
  }
  if (layer->merges() && xs.size() < 2) {
    misuse(absl::StrCat("the merge layer ", name, " needs 2 or more tensors, got ", xs.size()));
  }
  if (!layer->merges() && xs.size() != 1) {
    misuse(absl::StrCat("the layer ", name, " takes one tensor, got ", xs.size()));
  }
  std::vector<int> inputs;
  for (const SymbolicTensor& x : xs) {
    inputs.push_back(x.node());
    if (x.graph() == graph && graph->nodes[x.node()].taken && !graph->nodes[x.node()].is_input) {
      misuse(absl::StrCat("the layer ", name,
                          " was called on a tensor whose layer already belongs to a Model"));
    }
  }
  FunctionalGraph::Node node;
  node.layer = std::move(layer);
  node.inputs = std::move(inputs);
  node.error = std::move(error);
  graph->nodes.push_back(std::move(node));
  return SymbolicTensor(graph, static_cast<int>(graph->nodes.size()) - 1);
}

Model::Model(const SymbolicTensor& inputs, const SymbolicTensor& outputs)
    : Model(std::vector<SymbolicTensor>{inputs}, outputs) {}

Model::Model(const std::vector<SymbolicTensor>& inputs, const SymbolicTensor& outputs)
    : Model(inputs, std::vector<SymbolicTensor>{outputs}) {}

Model::Model(const std::vector<SymbolicTensor>& inputs, const std::vector<SymbolicTensor>& outputs)
    : Model() {
  definition_error_ = TakeLayers(inputs, outputs);
}

absl::Status Model::TakeLayers(const std::vector<SymbolicTensor>& inputs,
                               const std::vector<SymbolicTensor>& outputs) {
  auto fail = [](const std::string& what) { return absl::InvalidArgumentError(what); };
  if (inputs.empty()) return fail("a model needs at least one input");
  if (outputs.empty()) return fail("a model needs at least one output");
  FunctionalGraph& graph = *outputs[0].graph();
  std::vector<int> input_nodes, output_nodes;
  for (const SymbolicTensor& out : outputs) {
    if (out.graph() != outputs[0].graph())
      return fail("the model's outputs come from different graphs");
    if (graph.nodes[out.node()].is_input)
      return fail("the model has no layers between its inputs and outputs");
    if (std::find(output_nodes.begin(), output_nodes.end(), out.node()) != output_nodes.end()) {
      return fail("a tensor is listed twice among the model's outputs");
    }
    output_nodes.push_back(out.node());
  }
  for (const SymbolicTensor& in : inputs) {
    if (in.graph() != outputs[0].graph())
      return fail("the model's outputs do not come from its inputs");
    if (!graph.nodes[in.node()].is_input) return fail("the model's inputs must be Input() tensors");
    if (std::find(input_nodes.begin(), input_nodes.end(), in.node()) != input_nodes.end()) {
      return fail("an Input() is listed twice among the model's inputs");
    }
    input_nodes.push_back(in.node());
  }
  // Every node the outputs depend on, found backwards; calls come in an order
  // where inputs are made first, so that order is a topological one.
  std::vector<char> needed(graph.nodes.size(), 0);
  for (int n : output_nodes) needed[n] = 1;
  for (int n = *std::max_element(output_nodes.begin(), output_nodes.end()); n >= 0; --n) {
    if (!needed[n]) continue;
    // A misused call's inputs may name nodes of another graph: stop at it.
    if (!graph.nodes[n].error.ok()) return graph.nodes[n].error;
    for (int in : graph.nodes[n].inputs) needed[in] = 1;
  }
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (!needed[n]) continue;
    const FunctionalGraph::Node& node = graph.nodes[n];
    if (node.is_input && std::find(input_nodes.begin(), input_nodes.end(), static_cast<int>(n)) ==
                             input_nodes.end()) {
      return fail(
          "the model's outputs depend on an Input() that is not among its inputs (a disconnected "
          "graph)");
    }
    if (node.shared != nullptr) {
      if (node.shared->taken) {
        return fail(absl::StrCat("the shared layer ", node.shared->description,
                                 " already belongs to another Model"));
      }
    } else if (!node.is_input && node.layer == nullptr) {
      return fail("the layers of this graph already belong to another Model");
    }
  }
  // Nodes become layers; activation 0 is the (flat, for several inputs) example,
  // i + 1 the i-th layer's output.
  std::vector<int> activation(graph.nodes.size(), -1);
  int layers = 0;
  for (int n : input_nodes) input_shapes_.push_back(graph.nodes[n].input_shape);
  if (input_nodes.size() == 1) {
    activation[input_nodes[0]] = 0;
    const std::string& name = graph.nodes[input_nodes[0]].input_name;
    input_names_ = {name.empty() ? "input_layer" : name};
    DeclareInput(graph.nodes[input_nodes[0]].input_shape);
  } else {
    // Several inputs: each example holds every input's values in this order.
    int64_t offset = 0;
    for (int n : input_nodes) {
      const Shape& shape = graph.nodes[n].input_shape;
      auto slice = std::make_unique<InputSliceLayer>(offset, shape);
      slice->set_name(graph.nodes[n].input_name);  // "": input_layer, input_layer_1, ...
      AddNode(std::move(slice), {0});
      const std::string& name = layers_.back()->name();
      if (std::find(input_names_.begin(), input_names_.end(), name) != input_names_.end()) {
        return fail(absl::StrCat("two of the model's inputs are named \"", name, "\""));
      }
      input_names_.push_back(name);
      activation[n] = ++layers;
      offset += NumElements(shape);
    }
    DeclareInput({offset});
  }
  // A shared layer's first call here owns it; later calls use its weights.
  std::map<const SharedLayerSlot*, std::pair<Layer*, int>> shared_calls;  // Owner, calls.
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (!needed[n] || graph.nodes[n].is_input) continue;
    std::vector<int> reads;
    for (int in : graph.nodes[n].inputs) reads.push_back(activation[in]);
    const std::shared_ptr<SharedLayerSlot>& slot = graph.nodes[n].shared;
    if (slot == nullptr) {
      AddNode(std::move(graph.nodes[n].layer), std::move(reads));
    } else if (slot->layer != nullptr) {
      shared_calls[slot.get()] = {slot->layer.get(), 0};
      AddNode(std::move(slot->layer), std::move(reads));
      slot->taken = true;
    } else {
      auto& [owner, calls] = shared_calls.at(slot.get());
      AddNode(std::make_unique<SharedLayerCall>(owner, ++calls), std::move(reads));
    }
    graph.nodes[n].taken = true;
    activation[n] = ++layers;
  }
  for (int n : input_nodes) graph.nodes[n].taken = true;
  for (int n : output_nodes) outputs_.push_back(activation[n]);
  return absl::OkStatus();
}

}  // namespace ringwork
