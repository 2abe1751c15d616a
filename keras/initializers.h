// Weight initialisation as Keras does it: by default Glorot (Xavier) uniform for
// kernels, zeros for biases; or the Initializer a layer's options name.
// Deterministic in (seed, variable name), or in the initializer's own seed alone
// (as a seeded Keras initializer), so every worker draws the same values (the
// chief's are broadcast anyway).
//
//   model.Add(Dense(64, {.kernel_initializer = {.name = "he_normal", .seed = 7},
//                        .kernel_regularizer = {.l2 = 1e-4f}}));
#ifndef RINGWORK_KERAS_INITIALIZERS_H_
#define RINGWORK_KERAS_INITIALIZERS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "strategy/variable.h"
#include "tensor/tensor.h"

namespace ringwork {

// Keras' initializers by name: glorot_uniform, glorot_normal, he_uniform,
// he_normal, lecun_uniform, lecun_normal (variance scaling: the normal ones
// truncated at two deviations, as Keras'), random_uniform (minval, maxval),
// random_normal and truncated_normal (mean, stddev), zeros, ones, constant
// (value), orthogonal. "" is the layer's default.
struct Initializer {
  std::string name;
  float value = 0;  // constant
  float mean = 0, stddev = 0.05f;
  float minval = -0.05f, maxval = 0.05f;
  std::optional<uint64_t> seed;  // Unset: the model's seed mixed with the variable's name.
};

// Keras' L1L2 regularizer of a weight: l1 * sum |w| + l2 * sum w^2 is added to the
// loss (train and evaluate), its gradient to the weight's after the all-reduce.
struct Regularizer {
  float l1 = 0, l2 = 0;
  bool empty() const { return l1 == 0 && l2 == 0; }
};

// INVALID_ARGUMENT naming `what` for an unknown name or impossible arguments.
absl::Status CheckInitializer(const Initializer& init, const std::string& what);
absl::Status CheckRegularizer(const Regularizer& r, const std::string& what);

// Fills `t` as `init` says; `fallback` when init.name is empty. Fans as Keras
// computes them for the variable (a kernel [..window.., in, out]: window x in and
// window x out).
void Initialize(const Initializer& init, const std::string& fallback, Tensor& t, int64_t fan_in,
                int64_t fan_out, uint64_t seed, const std::string& name);

// As Keras 3 writes them in a layer's config ({"module": "keras.initializers",
// "class_name": "HeNormal", "config": {...}}; a regularizer's class L1L2; null
// for none) and reads them back: also tf.keras 2's and TF.js' forms, names
// ("he_normal") and VarianceScaling with the arguments of a named one.
nlohmann::json KerasJson(const Initializer& init);
nlohmann::json KerasJson(const Regularizer& r);
absl::StatusOr<Initializer> InitializerFromKeras(const nlohmann::json& j, const std::string& path);
absl::StatusOr<Regularizer> RegularizerFromKeras(const nlohmann::json& j, const std::string& path);

// A layer's weight options (DenseOptions, Conv2DOptions): checked, applied to a
// variable, written into its Keras config where they differ from Keras' defaults.
template <typename Options>
absl::Status CheckWeightOptions(const std::string& layer, const Options& o) {
  for (const Initializer* i : {&o.kernel_initializer, &o.bias_initializer}) {
    if (absl::Status s = CheckInitializer(*i, layer); !s.ok()) return s;
  }
  for (const Regularizer* r : {&o.kernel_regularizer, &o.bias_regularizer}) {
    if (absl::Status s = CheckRegularizer(*r, layer); !s.ok()) return s;
  }
  return absl::OkStatus();
}
template <typename Options>
void AddWeightOptions(const Options& o, nlohmann::json* config) {
  if (!o.kernel_initializer.name.empty()) {
    (*config)["kernel_initializer"] = KerasJson(o.kernel_initializer);
  }
  if (!o.bias_initializer.name.empty()) {
    (*config)["bias_initializer"] = KerasJson(o.bias_initializer);
  }
  if (!o.kernel_regularizer.empty()) {
    (*config)["kernel_regularizer"] = KerasJson(o.kernel_regularizer);
  }
  if (!o.bias_regularizer.empty()) (*config)["bias_regularizer"] = KerasJson(o.bias_regularizer);
}
inline void Regularize(const Regularizer& r, Variable* v) {
  v->l1 = r.l1;
  v->l2 = r.l2;
}

// Uniform in [-limit, limit], limit = sqrt(6 / (fan_in + fan_out)).
void GlorotUniform(Tensor& t, int64_t fan_in, int64_t fan_out, uint64_t seed,
                   const std::string& name);

// Uniform in [-limit, limit] (Keras' RandomUniform; "uniform" is limit 0.05).
void RandomUniform(Tensor& t, float limit, uint64_t seed, const std::string& name);

// Keras' Orthogonal (gain 1) for a [rows, cols] matrix: orthonormal rows or
// columns (whichever are fewer), from the QR decomposition of a normal matrix
// (Gram-Schmidt here, signs as Keras': r's diagonal positive).
void Orthogonal(Tensor& t, int64_t rows, int64_t cols, uint64_t seed, const std::string& name);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_INITIALIZERS_H_
