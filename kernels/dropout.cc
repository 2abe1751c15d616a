#include "kernels/dropout.h"

namespace ringwork {
namespace {

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

float CounterUniform(uint64_t seed, uint64_t step, uint64_t index) {
  const uint64_t bits = SplitMix64(SplitMix64(seed ^ SplitMix64(step)) ^ index);
  return static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);  // 24 bits.
}

void DropoutForward(const float* x, float* y, float* mask, int64_t count, float rate, uint64_t seed,
                    uint64_t step) {
  const float keep_scale = rate < 1.f ? 1.f / (1.f - rate) : 0.f;
  for (int64_t i = 0; i < count; ++i) {
    mask[i] = CounterUniform(seed, step, static_cast<uint64_t>(i)) >= rate ? keep_scale : 0.f;
    y[i] = x[i] * mask[i];
  }
}

void DropoutBackward(const float* dy, const float* mask, float* dx, int64_t count) {
  for (int64_t i = 0; i < count; ++i) dx[i] = dy[i] * mask[i];
}

}  // namespace ringwork
