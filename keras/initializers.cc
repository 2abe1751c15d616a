#include "keras/initializers.h"

#include <cmath>
#include <functional>
#include <random>

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

}  // namespace ringwork
