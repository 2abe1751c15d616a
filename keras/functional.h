// Keras' functional API: layers called on symbolic tensors describe a graph (a
// residual connection, a fan-out, merge layers); Model(inputs, outputs)
// (keras/model.h) takes the graph's layers and trains it (Compile, Fit, Evaluate,
// Predict, Summary, checkpoints, agreement checks, gradients overlapped with the
// backward pass). Layers stay unaware of the graph: the model owns the order.
//
//   auto scope = strategy->scope();
//   SymbolicTensor x = Input({28, 28, 1});
//   SymbolicTensor h = Apply(Conv2D(16, 3, {.padding = "same"}), x);
//   SymbolicTensor y = Apply(Conv2D(16, 3, {.padding = "same"}), h);
//   y = Apply(Add(), {y, h});                      // a residual connection
//   y = Apply(Dense(10), Apply(Flatten(), y));
//   Model model(x, y);
//   RW_RETURN_IF_ERROR(model.Compile({.loss = {"sparse_categorical_crossentropy", true}}));
//   // One layer on two inputs (a siamese tower): its weights are shared.
//   SymbolicTensor left = Input({8}), right = Input({8});
//   SharedLayer tower = Share(Dense(16, {.activation = "relu"}));
//   SymbolicTensor a = Apply(tower, left), b = Apply(tower, right);
//   Model siamese({left, right}, Apply(Dense(1), Apply(Concatenate(), {a, b})));
//
// Several inputs: Model({ids, numbers}, outputs) reads examples that hold every
// input's values one after the other, flat ([n, 2 + 3] for inputs of shapes [2] and
// [3]): each becomes an InputLayer that cuts its part out. A pipeline's features
// bind to the inputs by name (Input({2}, "ids"); keras/pipeline_batch.h).
// Several outputs: Model(inputs, {price, category}) learns each with its own loss
// (CompileOptions::losses, loss_weights); outputs are named by their layers.
// A layer called on several tensors shares its weights across the calls (Keras'
// shared layers: a siamese tower, one embedding for two texts, as `siamese`
// above); training adds up every call's gradients.
// The model's first call of a shared layer owns it (its weights, its name); each
// later call is a layer named NAME@1, NAME@2, ... without weights of its own
// (keras/shared_layer_call.h). Shapes are checked when the model is built (the first
// Fit, Evaluate or Predict, or Build): errors name the layer and the shapes. A graph
// that cannot become a model (an output that depends on an Input not among the
// model's inputs, a layer that already belongs to another model) makes Compile
// fail. The Input() calls of a thread share one graph until a model takes them.
#ifndef RINGWORK_KERAS_FUNCTIONAL_H_
#define RINGWORK_KERAS_FUNCTIONAL_H_

#include <memory>
#include <string>
#include <vector>

#include "keras/layer.h"

namespace ringwork {

struct FunctionalGraph;

// A tensor of the graph being described: the model's input, or a layer's output.
class SymbolicTensor {
 public:
  SymbolicTensor(std::shared_ptr<FunctionalGraph> graph, int node)
      : graph_(std::move(graph)), node_(node) {}
  const std::shared_ptr<FunctionalGraph>& graph() const { return graph_; }
  int node() const { return node_; }

 private:
  std::shared_ptr<FunctionalGraph> graph_;
  int node_;
};

// A model's input: examples of `shape` (no batch dimension); `name` binds it to a
// pipeline's feature of that name (default: input_layer, input_layer_1, ...).
SymbolicTensor Input(Shape shape, std::string name = "");
// `layer` named `name`, as Keras' name= argument: Apply(Named(Dense(1), "price"), h).
// An output's name keys its loss, loss weight, logs and targets.
std::unique_ptr<Layer> Named(std::unique_ptr<Layer> layer, std::string name);
// `layer` called on `x` (one input) or on `xs` (a merge layer: Add, Multiply, Concatenate).
SymbolicTensor Apply(std::unique_ptr<Layer> layer, const SymbolicTensor& x);
SymbolicTensor Apply(std::unique_ptr<Layer> layer, const std::vector<SymbolicTensor>& xs);

struct SharedLayerSlot;  // keras/functional.cc

// A layer that may be called several times (Share). Copies are handles to the
// same layer. A layer with moving statistics (BatchNormalization) or of several
// inputs (a merge layer) cannot be shared; nor can a layer that is one model's
// (calls of it from another model's graph are refused).
class SharedLayer {
 public:
  explicit SharedLayer(std::unique_ptr<Layer> layer);
  const std::shared_ptr<SharedLayerSlot>& slot() const { return slot_; }

 private:
  std::shared_ptr<SharedLayerSlot> slot_;
};
SharedLayer Share(std::unique_ptr<Layer> layer);
SymbolicTensor Apply(const SharedLayer& layer, const SymbolicTensor& x);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_FUNCTIONAL_H_
