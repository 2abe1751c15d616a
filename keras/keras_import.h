// Keras models from their JSON: tf.keras 2's model.to_json() (which TF.js'
// model.json holds as its modelTopology) and Keras 3's config.json, Sequential and
// Functional, for the layers Ringwork has, with Keras' argument names and
// defaults. A layer, argument or value Ringwork does not support is refused with
// INVALID_ARGUMENT (exit 2) naming it and its JSON path: nothing that changes the
// math is ignored (regularizers, constraints, other initializers, dilation,
// channels first, masking). "trainable": false freezes the layer (Layer::set_trainable).
//
//   std::string text;  // model.to_json()'s output, or a config.json
//   auto scope = strategy->scope();
//   RW_ASSIGN_OR_RETURN(Model model, ModelFromKerasJson(text));
//   RW_RETURN_IF_ERROR(model.Compile({.loss = {"sparse_categorical_crossentropy"}}));
//   RW_RETURN_IF_ERROR(model.Build(model.signature().input_shapes[0]));
//   RW_RETURN_IF_ERROR(model.LoadWeights("tfjs_model/model.json"));  // or .npz, ...
//
// Layers: those IsBuiltInLayerClass (keras/keras_layer_config.h) names (docs/MODELS.md lists how
// each differs from Keras), and the classes registered with RegisterLayer (keras/custom_objects.h),
// made from their config.
#ifndef RINGWORK_KERAS_KERAS_IMPORT_H_
#define RINGWORK_KERAS_KERAS_IMPORT_H_

#include <string>

#include "absl/status/statusor.h"
#include "keras/keras_layer_config.h"
#include "keras/model.h"

namespace ringwork {

absl::StatusOr<Model> ModelFromKerasJson(const std::string& json_text);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_KERAS_IMPORT_H_
