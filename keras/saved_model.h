// A whole model, its architecture and its weights, saved in a format other tools
// read (TF.js' layers format: DIR/model.json and its weights, keras/tfjs_export.h)
// and loaded back without the C++ that defined it.
//
//   RW_RETURN_IF_ERROR(SaveModel(model, "/srv/model"));        // every worker calls it
//   auto scope = strategy->scope();
//   RW_ASSIGN_OR_RETURN(Model loaded, LoadModel("/srv/model"));  // compiled, built, weights in
//   loaded.Predict(x);   // bit-identical to model.Predict(x)
//
// LoadModel reads DIR/model.json (or the model.json given): any TF.js layers model
// or Ringwork's own, through ModelFromKerasJson (keras/keras_import.h). Without
// `compile` it compiles for prediction and fine-tuning: binary cross-entropy on
// a sigmoid output, else sparse categorical cross-entropy (from probabilities
// after a softmax, else from logits), Adam. Errors as ModelFromKerasJson's and LoadWeights'.
#ifndef RINGWORK_KERAS_SAVED_MODEL_H_
#define RINGWORK_KERAS_SAVED_MODEL_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "keras/model.h"

namespace ringwork {

absl::Status SaveModel(const Model& model, const std::string& dir);
absl::StatusOr<Model> LoadModel(const std::string& path,
                                std::optional<CompileOptions> compile = std::nullopt);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_SAVED_MODEL_H_
