// Helpers for kernel tests: seeded random data and error measures.
#ifndef RINGWORK_KERNELS_TEST_UTIL_H_
#define RINGWORK_KERNELS_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace ringwork {

inline std::vector<float> RandomVector(int64_t n, uint64_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(random);
  return v;
}

// max over i of |a_i - b_i| / max(|b_i|, floor).
inline double MaxRelativeError(const float* a, const float* b, int64_t n, double floor = 1.0) {
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double scale = std::max(std::fabs(static_cast<double>(b[i])), floor);
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]) / scale);
  }
  return worst;
}

inline double MaxRelativeError(const std::vector<float>& a, const std::vector<float>& b,
                               double floor = 1.0) {
  return MaxRelativeError(a.data(), b.data(), static_cast<int64_t>(b.size()), floor);
}

}  // namespace ringwork

#endif  // RINGWORK_KERNELS_TEST_UTIL_H_
