// A model's inference graph as ONNX (IR version 8, opset 17: what Debian's
// python3-onnx 1.12 checks and ONNX Runtime runs), for serving it elsewhere.
//
//   RW_RETURN_IF_ERROR(ExportOnnx(model, "model.onnx"));   // every worker calls it
//
// One input "input" in the model's own layout (channels last, as tf2onnx writes by
// default) with a dynamic batch dimension "batch"; one output per model output,
// named by its layer, holding what Predict returns (probabilities where the model
// ends in a softmax). Weights are initializers under their Keras names; Dropout
// and RandomFlip are left out (inference); image layers run channels first
// between transposes; batch normalization is its inference form (a scale and a
// shift per channel). Layers: Dense, Conv2D, MaxPooling2D, AveragePooling2D,
// GlobalAveragePooling2D, (Sync)BatchNormalization, LayerNormalization, Embedding
// (Gather), SliceLastAxis, Activation, Flatten, Reshape, Dropout, RandomFlip, Add,
// Multiply, Concatenate; another (or a model of several inputs) is refused with
// INVALID_ARGUMENT naming it.
// The chief writes the file atomically; every worker returns its result.
#ifndef RINGWORK_KERAS_ONNX_EXPORT_H_
#define RINGWORK_KERAS_ONNX_EXPORT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "keras/model.h"

namespace ringwork {

absl::Status ExportOnnx(const Model& model, const std::string& path);
// The file's bytes, on this worker alone: what ExportOnnx writes, or its error
// (`train --export_onnx` asks before training whether the model exports).
absl::StatusOr<std::string> OnnxModelBytes(const Model& model);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_ONNX_EXPORT_H_
