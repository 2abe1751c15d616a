// One layer of a Keras config (tf.keras 2's, Keras 3's or TF.js') made as
// Ringwork's layer, with Keras' argument names and defaults; what would change
// the math and Ringwork lacks is refused with INVALID_ARGUMENT naming its JSON
// path. keras/keras_import.h reads whole models with it.
//
//   RW_ASSIGN_OR_RETURN(std::unique_ptr<Layer> dense,
//                       LayerFromKerasConfig("Dense", {{"units", 4}}, "$.layers[1]"));
#ifndef RINGWORK_KERAS_KERAS_LAYER_CONFIG_H_
#define RINGWORK_KERAS_KERAS_LAYER_CONFIG_H_

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "keras/layer.h"

namespace ringwork {

// `type`: the Keras class; `name`: the layer's (else its config's "name", else an
// automatic one). "trainable": false freezes it. Classes registered with
// RegisterLayer are made by their factories.
absl::StatusOr<std::unique_ptr<Layer>> LayerFromKerasConfig(const std::string& type,
                                                            const nlohmann::json& config,
                                                            const std::string& path,
                                                            const std::string& name = "");

// Whether the class is a merge layer of several inputs (Add, Multiply, Concatenate).
bool IsMergeLayerClass(const std::string& class_name);

// Whether Ringwork makes layers of this class itself (a layer registered with
// RegisterLayer may not take such a name).
bool IsBuiltInLayerClass(const std::string& class_name);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_KERAS_LAYER_CONFIG_H_
