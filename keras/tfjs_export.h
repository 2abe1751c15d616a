// A model in TensorFlow.js' layers format, so that it runs in a browser or in Node
// as it is (tf.loadLayersModel): DIR/model.json holds the Keras topology (tf.keras
// 2's JSON: each layer's class_name and config under Keras' names) and a weights
// manifest; DIR/group1-shard1of1.bin the weights, float32, in the manifest's order.
//
//   RW_RETURN_IF_ERROR(ExportTfjs(model, "/srv/model"));   // every worker calls it
//
// RandomFlip is left out (inference); SyncBatchNormalization is a
// BatchNormalization. Layers: Dense, Conv2D, MaxPooling2D, AveragePooling2D,
// GlobalAveragePooling2D, (Sync)BatchNormalization, LayerNormalization, Embedding,
// Activation, Flatten, Reshape, Dropout, Add, Multiply, Concatenate, and an
// InputLayer per input; another is refused with INVALID_ARGUMENT naming it. The chief
// writes (each file atomically, the weights first); every worker returns its result.
#ifndef RINGWORK_KERAS_TFJS_EXPORT_H_
#define RINGWORK_KERAS_TFJS_EXPORT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "keras/model.h"

namespace ringwork {

absl::Status ExportTfjs(const Model& model, const std::string& dir);

// model.json's text and the weights' bytes, on this worker alone.
struct TfjsArtifacts {
  std::string model_json;
  std::string weights;
};
absl::StatusOr<TfjsArtifacts> TfjsModel(const Model& model);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_TFJS_EXPORT_H_
