// Keras 3's model files: the .keras archive (a zip of config.json,
// metadata.json and model.weights.h5, which keras.saving.load_model reads) and
// the .weights.h5 of model.save_weights.
//
//   RW_RETURN_IF_ERROR(SaveKerasArchive(model, "model.keras"));   // every worker calls it
//   RW_RETURN_IF_ERROR(model.SaveWeights("model.weights.h5"));     // Keras 3's layout too
//   RW_ASSIGN_OR_RETURN(Model loaded, LoadModel("model.keras"));   // keras/saved_model.h
//
// config.json is Keras 3's Functional config, with the model's compile_config
// (keras/keras_compile_config.h). The weights file is Keras 3's layout: each
// layer's variables at layers/NAME/vars/0, 1, ... in Keras' order, NAME being
// the layer's class in snake case, numbered in the model's layer order
// (dense, dense_1, ...), not the layer's own name. The optimizer's state is not
// saved (Keras warns that it skips it and starts the optimizer afresh);
// BackupAndRestore's checkpoints are what resume training. The chief writes,
// atomically; every worker returns its result. Errors as KerasGraphOf's.
#ifndef RINGWORK_KERAS_KERAS_ARCHIVE_H_
#define RINGWORK_KERAS_KERAS_ARCHIVE_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "keras/model.h"

namespace ringwork {

absl::Status SaveKerasArchive(const Model& model, const std::string& path);

// On this worker alone: config.json's text, the weights file's bytes.
absl::StatusOr<std::string> KerasConfigJson(const Model& model);
absl::StatusOr<std::string> KerasWeightsH5(const Model& model);
// Where Keras 3 keeps each of the model's variables: h5 path -> variable name
// ("layers/dense_1/vars/0" -> "output/kernel").
absl::StatusOr<std::map<std::string, std::string>> KerasH5Layout(const Model& model);

// Keras' to_snake_case: "Conv2D" -> "conv2d", "BatchNormalization" -> "batch_normalization".
std::string KerasSnakeCase(const std::string& class_name);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_KERAS_ARCHIVE_H_
