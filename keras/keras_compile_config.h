// Keras 3's compile_config (what model.compile was given: optimizer, loss,
// loss_weights, metrics), written into and read from a .keras archive's
// config.json, so that a saved model trains on as it was compiled.
//
//   nlohmann::json c = KerasCompileConfig(options);   // {"optimizer": {...}, "loss": ...}
//   RW_ASSIGN_OR_RETURN(CompileOptions back, CompileOptionsFromKeras(c, "$.compile_config"));
//
// Optimizers Adam, AdamW and SGD (by class or by name), with learning_rate,
// beta_1, beta_2, epsilon, momentum, nesterov, weight_decay and the clipping
// arguments; losses by name or as a loss object (from_logits); metrics by name.
// A learning-rate schedule is written as its starting rate, with a warning.
// Anything else (amsgrad, EMA, another optimizer or loss, a value of the wrong
// type) is INVALID_ARGUMENT (exit 2) naming its JSON path.
#ifndef RINGWORK_KERAS_KERAS_COMPILE_CONFIG_H_
#define RINGWORK_KERAS_KERAS_COMPILE_CONFIG_H_

#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "keras/model.h"

namespace ringwork {

nlohmann::json KerasCompileConfig(const CompileOptions& options);
absl::StatusOr<CompileOptions> CompileOptionsFromKeras(const nlohmann::json& config,
                                                       const std::string& path);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_KERAS_COMPILE_CONFIG_H_
