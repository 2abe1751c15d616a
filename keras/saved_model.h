// A whole model, its architecture and its weights, saved in a format other tools
// read and loaded back without the C++ that defined it: a PATH ending in .keras
// is Keras 3's archive (keras/keras_archive.h, with the compile settings), any
// other a directory in TF.js' layers format (DIR/model.json and its weights,
// keras/tfjs_export.h).
//
//   RW_RETURN_IF_ERROR(SaveModel(model, "/srv/model.keras"));        // every worker calls it
//   auto scope = strategy->scope();
//   RW_ASSIGN_OR_RETURN(Model loaded, LoadModel("/srv/model.keras"));  // compiled, built, weights
//   absl::StatusOr<Tensor> y = loaded.Predict(x);   // bit-identical to model.Predict(x)
//
// LoadModel reads a .keras archive, DIR/model.json or the model.json given: any
// TF.js layers model or Ringwork's own, through ModelFromKerasJson
// (keras/keras_import.h). It compiles with `compile`, else an archive's
// compile_config (one Ringwork cannot honour is set aside with a warning), else
// for prediction and fine-tuning: binary cross-entropy on
// a sigmoid output, else sparse categorical cross-entropy (from probabilities
// after a softmax, else from logits), Adam. Load inside the strategy's scope to
// train on a cluster (outside it, Fit refuses: CompileOptions::train_alone).
// Errors as ModelFromKerasJson's,
// CompileOptionsFromKeras' and LoadWeights'.
#ifndef RINGWORK_KERAS_SAVED_MODEL_H_
#define RINGWORK_KERAS_SAVED_MODEL_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "keras/model.h"

namespace ringwork {

absl::Status SaveModel(const Model& model, const std::string& path);
absl::StatusOr<Model> LoadModel(const std::string& path,
                                std::optional<CompileOptions> compile = std::nullopt);
// The model's Keras JSON alone: a .keras archive's config.json, DIR/model.json,
// or the JSON file given. NOT_FOUND for a missing file; DATA_LOSS for a damaged archive.
absl::StatusOr<std::string> ReadModelJson(const std::string& path);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_SAVED_MODEL_H_
