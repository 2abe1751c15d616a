// exp, and tanh and the sigmoid built on it, in float without libm, for the
// sequence kernels' loops (recurrent_cells.cc, attention.cc): branch-free, so
// that a loop of them vectorizes in a library built without trapping math.
//
//   for (int64_t i = 0; i < n; ++i) y[i] = FastSigmoid(x[i]);
//
// FastExp: x = n ln2 + r, |r| <= ln2 / 2, e^r by Cephes' expf polynomial (within
// about 1 ulp), times 2^n through the exponent bits; inputs clamped to where
// e^x is a finite normal float; NaN stays NaN. FastTanh: Cephes' tanhf (an odd
// polynomial below 0.625, else from one exp).
#ifndef RINGWORK_KERNELS_FAST_EXP_H_
#define RINGWORK_KERNELS_FAST_EXP_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace ringwork {

inline float FastExp(float x) {
  // x first: a NaN stays NaN through both (and through the rest).
  const float clamped = std::min(std::max(x, -87.3f), 88.3762626647949f);
  const float shifted = clamped * 1.44269504088896341f + 0.5f;
  int32_t n = static_cast<int32_t>(shifted);
  n -= shifted < static_cast<float>(n);  // floor, for negative x too
  const float nf = static_cast<float>(n);
  const float r = clamped - nf * 0.693359375f + nf * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = p * r * r + r + 1.0f;
  const uint32_t bits = static_cast<uint32_t>(n + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return er * scale;
}

inline float FastSigmoid(float x) { return 1.f / (1.f + FastExp(-x)); }

inline float FastTanh(float x) {
  // The polynomial, on x clamped to where it is used (beyond, x^11 would overflow).
  const float xs = std::min(std::max(x, -0.625f), 0.625f);
  const float z = xs * xs;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = p * z * xs + xs;
  const float t = FastExp(-2.f * std::fabs(x));
  const float large = std::copysign((1.f - t) / (1.f + t), x);
  // Blend by a 0/1 weight rather than a select, which some clones leave as a branch.
  const float use_small = static_cast<float>(std::fabs(x) < 0.625f);
  return use_small * small + (1.f - use_small) * large;
}

}  // namespace ringwork

#endif  // RINGWORK_KERNELS_FAST_EXP_H_
