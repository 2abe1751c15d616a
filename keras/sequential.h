// Keras' Sequential: a Model whose layers form a chain, each taking the previous
// one's output. Everything else (Compile, Fit, Evaluate, Predict, Summary,
// checkpoints) is the Model's (keras/model.h).
//
//   auto scope = strategy->scope();                    // a mirrored model
//   Sequential model;
//   model.Add(Flatten());
//   model.Add(Dense(256, {.activation = "relu"}));
//   model.Add(Dense(10));
//   RW_RETURN_IF_ERROR(model.Compile({.loss = {"sparse_categorical_crossentropy", true}}));
//   absl::StatusOr<History> history = model.Fit(train, {.epochs = 5, .batch_size = 256});
#ifndef RINGWORK_KERAS_SEQUENTIAL_H_
#define RINGWORK_KERAS_SEQUENTIAL_H_

#include <memory>
#include <vector>

#include "keras/model.h"

namespace ringwork {

class Sequential : public Model {
 public:
  // Uses the strategy of the current scope, if any.
  Sequential();
  explicit Sequential(std::vector<std::unique_ptr<Layer>> layers);

  // Appends `layer`, which takes the last layer's output (the first: the input).
  void Add(std::unique_ptr<Layer> layer);
};

}  // namespace ringwork

#endif  // RINGWORK_KERAS_SEQUENTIAL_H_
