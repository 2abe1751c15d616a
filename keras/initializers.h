// Weight initialisation as Keras does it by default: Glorot (Xavier) uniform for
// kernels, zeros for biases. Deterministic in (seed, variable name), so every
// worker draws the same values (the chief's are broadcast anyway).
#ifndef RINGWORK_KERAS_INITIALIZERS_H_
#define RINGWORK_KERAS_INITIALIZERS_H_

#include <cstdint>
#include <string>

#include "tensor/tensor.h"

namespace ringwork {

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
