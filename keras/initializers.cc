#include "keras/initializers.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "base/fnv1a.h"

namespace ringwork {

void GlorotUniform(Tensor& t, int64_t fan_in, int64_t fan_out, uint64_t seed,
                   const std::string& name) {
  // std::hash is not stable across builds; FNV-1a of the name is.
  std::mt19937_64 random(seed ^ Fnv1a64(name));
  const float limit = std::sqrt(6.0f / static_cast<float>(fan_in + fan_out));
  std::uniform_real_distribution<float> dist(-limit, limit);
  for (int64_t i = 0; i < t.size(); ++i) t[i] = dist(random);
}

void RandomUniform(Tensor& t, float limit, uint64_t seed, const std::string& name) {
  std::mt19937_64 random(seed ^ Fnv1a64(name));
  std::uniform_real_distribution<float> dist(-limit, limit);
  for (int64_t i = 0; i < t.size(); ++i) t[i] = dist(random);
}

void Orthogonal(Tensor& t, int64_t rows, int64_t cols, uint64_t seed, const std::string& name) {
  std::mt19937_64 random(seed ^ Fnv1a64(name));
  std::normal_distribution<double> normal(0.0, 1.0);
  const int64_t tall = std::max(rows, cols), narrow = std::min(rows, cols);
  // Columns of a [tall, narrow] normal matrix, made orthonormal in order.
  std::vector<std::vector<double>> q(static_cast<size_t>(narrow),
                                     std::vector<double>(static_cast<size_t>(tall)));
  for (int64_t r = 0; r < tall; ++r) {
    for (int64_t c = 0; c < narrow; ++c) q[c][r] = normal(random);
  }
  for (int64_t c = 0; c < narrow; ++c) {
    for (int64_t p = 0; p < c; ++p) {  // Modified Gram-Schmidt.
      double dot = 0;
      for (int64_t r = 0; r < tall; ++r) dot += q[c][r] * q[p][r];
      for (int64_t r = 0; r < tall; ++r) q[c][r] -= dot * q[p][r];
    }
    double norm = 0;
    for (int64_t r = 0; r < tall; ++r) norm += q[c][r] * q[c][r];
    norm = std::sqrt(norm);
    for (int64_t r = 0; r < tall; ++r) q[c][r] /= norm;
  }
  // [tall, narrow] as [rows, cols]: transposed when the rows are fewer.
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      t[r * cols + c] = static_cast<float>(rows >= cols ? q[c][r] : q[r][c]);
    }
  }
}

}  // namespace ringwork
