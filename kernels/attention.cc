#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/fast_exp.h"

// The 64-byte vectors below never cross a call (every helper is inlined into its
// caller's clone), so GCC's note on their calling convention does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace ringwork {
namespace {

// rows x cols (row stride `stride`) -> cols x rows (row stride `out_stride`, else rows).
void Transpose(const float* in, int64_t rows, int64_t cols, int64_t stride, float* out,
               int64_t out_stride = 0) {
  if (out_stride == 0) out_stride = rows;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) out[c * out_stride + r] = in[r * stride + c];
  }
}

// Sixteen floats, one AVX-512 register (two AVX2 ones): the fast path keeps its
// sums in these instead of in memory, where every step of a sum waited on the
// store of the step before.
using Vec = float __attribute__((vector_size(64)));
// Inlined into each instruction set's clone of the callers, so built for it.
#define RINGWORK_INLINE inline __attribute__((always_inline))
constexpr int64_t kLanes = 16;

RINGWORK_INLINE Vec Load(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
RINGWORK_INLINE void Store(float* p, const Vec& v) { std::memcpy(p, &v, sizeof v); }
RINGWORK_INLINE Vec Splat(float x) { return Vec{} + x; }
int64_t Padded(int64_t n) { return (n + kLanes - 1) / kLanes * kLanes; }

// out[0, padded) = sum over d < depth of a[d] * b[d * stride + (0, padded)]: the
// row of scores (or dP) of one query against every key, `blocks` vectors wide.
template <int kBlocks>
RINGWORK_INLINE void RowTimesColumns(const float* a, float scale, const float* b, int64_t depth,
                                     int64_t stride, float* out) {
  Vec acc[kBlocks] = {};
  for (int64_t d = 0; d < depth; ++d) {
    const Vec x = Splat(a[d] * scale);
    for (int k = 0; k < kBlocks; ++k) acc[k] += x * Load(b + d * stride + k * kLanes);
  }
  for (int k = 0; k < kBlocks; ++k) Store(out + k * kLanes, acc[k]);
}

RINGWORK_INLINE void RowTimesColumnsAny(const float* a, float scale, const float* b, int64_t depth,
                                        int64_t stride, int64_t padded, float* out) {
  int64_t j = 0;
  for (; j + 4 * kLanes <= padded; j += 4 * kLanes) {
    RowTimesColumns<4>(a, scale, b + j, depth, stride, out + j);
  }
  switch ((padded - j) / kLanes) {
    case 1:
      return RowTimesColumns<1>(a, scale, b + j, depth, stride, out + j);
    case 2:
      return RowTimesColumns<2>(a, scale, b + j, depth, stride, out + j);
    case 3:
      return RowTimesColumns<3>(a, scale, b + j, depth, stride, out + j);
    default:
      return;
  }
}

// out[0, width) = sum over j < n of w[j] * rows[j * stride + (0, width)], width a
// multiple of 16 (two sums, even and odd j, to halve the chain).
RINGWORK_INLINE void WeightedRows(const float* w, const float* rows, int64_t n, int64_t stride,
                                  int64_t width, float* out) {
  for (int64_t c = 0; c < width; c += kLanes) {
    Vec even = {}, odd = {};
    int64_t j = 0;
    for (; j + 1 < n; j += 2) {
      even += Splat(w[j]) * Load(rows + j * stride + c);
      odd += Splat(w[j + 1]) * Load(rows + (j + 1) * stride + c);
    }
    if (j < n) even += Splat(w[j]) * Load(rows + j * stride + c);
    Store(out + c, even + odd);
  }
}

// y[0, width) += a * x[0, width), width a multiple of 16.
RINGWORK_INLINE void AddScaled(float a, const float* x, int64_t width, float* y) {
  const Vec s = Splat(a);
  for (int64_t c = 0; c < width; c += kLanes) Store(y + c, Load(y + c) + s * Load(x + c));
}

// The softmax of scores[0, n), written to out.
RINGWORK_INLINE void Softmax(const float* scores, int64_t n, float* out) {
  const float largest = *std::max_element(scores, scores + n);
  float sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    out[j] = FastExp(scores[j] - largest);
    sum += out[j];
  }
  const float inverse = 1.f / sum;
  for (int64_t j = 0; j < n; ++j) out[j] *= inverse;
}

bool FastPath(const AttentionShape& s) {
  return s.key_dim % kLanes == 0 && s.value_dim % kLanes == 0;
}

}  // namespace

// Compiled for AVX-512, AVX2 and the baseline, picked at load time (the rows are
// short: wider vectors pay off).
#define RINGWORK_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

RINGWORK_VECTOR_CLONES void AttentionForward(const AttentionShape& s, const float* q,
                                             const float* k, const float* v, float* probabilities,
                                             float* context, const uint8_t* key_mask) {
  // Keras' mask: -1e9 on the scores of padding keys, whose weights are then 0
  // (FastExp stops at e^-87.3, where Keras' exp underflows to 0). A row of padding
  // only stays uniform, as Keras'.
  const auto mask_keys = [&](int64_t b, float* scores) {
    if (key_mask == nullptr) return;
    for (int64_t j = 0; j < s.steps; ++j) {
      if (key_mask[b * s.steps + j] == 0) scores[j] += -1e9f;
    }
  };
  const auto zero_masked = [&](int64_t b, float* p) {
    if (key_mask == nullptr) return;
    const uint8_t* keep = key_mask + b * s.steps;
    if (std::find(keep, keep + s.steps, 1) == keep + s.steps) return;
    for (int64_t j = 0; j < s.steps; ++j) p[j] = keep[j] ? p[j] : 0.f;
  };
  const int64_t T = s.steps, qk = s.heads * s.key_dim, vw = s.heads * s.value_dim;
  const float scale = 1.f / std::sqrt(static_cast<float>(s.key_dim));
  if (FastPath(s)) {
    const int64_t padded = Padded(T);
    std::vector<float> kt(static_cast<size_t>(s.key_dim * padded), 0.f), scores(padded);
    for (int64_t b = 0; b < s.batch; ++b) {
      for (int64_t h = 0; h < s.heads; ++h) {
        Transpose(k + b * T * qk + h * s.key_dim, T, s.key_dim, qk, kt.data(), padded);
        float* p = probabilities + (b * s.heads + h) * T * T;
        const float* vh = v + b * T * vw + h * s.value_dim;
        for (int64_t i = 0; i < T; ++i) {
          RowTimesColumnsAny(q + (b * T + i) * qk + h * s.key_dim, scale, kt.data(), s.key_dim,
                             padded, padded, scores.data());
          mask_keys(b, scores.data());
          Softmax(scores.data(), T, p + i * T);
          zero_masked(b, p + i * T);
          WeightedRows(p + i * T, vh, T, vw, s.value_dim,
                       context + (b * T + i) * vw + h * s.value_dim);
        }
      }
    }
    return;
  }
  std::vector<float> kt(static_cast<size_t>(s.key_dim * T));
  std::fill(context, context + s.batch * T * vw, 0.f);
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      Transpose(k + b * T * qk + h * s.key_dim, T, s.key_dim, qk, kt.data());
      float* p = probabilities + (b * s.heads + h) * T * T;
      for (int64_t i = 0; i < T; ++i) {
        float* row = p + i * T;
        const float* qi = q + (b * T + i) * qk + h * s.key_dim;
        std::fill(row, row + T, 0.f);
        for (int64_t d = 0; d < s.key_dim; ++d) {
          const float qd = qi[d] * scale;
          const float* kd = kt.data() + d * T;
          for (int64_t j = 0; j < T; ++j) row[j] += qd * kd[j];
        }
        mask_keys(b, row);
        Softmax(row, T, row);
        zero_masked(b, row);
        float* ci = context + (b * T + i) * vw + h * s.value_dim;
        for (int64_t j = 0; j < T; ++j) {
          const float pij = row[j];
          const float* vj = v + (b * T + j) * vw + h * s.value_dim;
          for (int64_t d = 0; d < s.value_dim; ++d) ci[d] += pij * vj[d];
        }
      }
    }
  }
}

// Dimensions of multiples of 16: the sums in registers.
RINGWORK_VECTOR_CLONES static void AttentionBackwardFast(const AttentionShape& s, const float* q,
                                                         const float* k, const float* v,
                                                         const float* probabilities,
                                                         const float* dcontext, float* dq,
                                                         float* dk, float* dv) {
  const int64_t T = s.steps, qk = s.heads * s.key_dim, vw = s.heads * s.value_dim;
  const float scale = 1.f / std::sqrt(static_cast<float>(s.key_dim));
  const int64_t padded = Padded(T);
  std::fill(dk, dk + s.batch * T * qk, 0.f);
  std::fill(dv, dv + s.batch * T * vw, 0.f);
  std::vector<float> vt(static_cast<size_t>(s.value_dim * padded), 0.f), dp(padded), ds(T);
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      Transpose(v + b * T * vw + h * s.value_dim, T, s.value_dim, vw, vt.data(), padded);
      const float* p = probabilities + (b * s.heads + h) * T * T;
      const float* kh = k + b * T * qk + h * s.key_dim;
      for (int64_t i = 0; i < T; ++i) {
        const float* row = p + i * T;
        const float* dci = dcontext + (b * T + i) * vw + h * s.value_dim;
        // dP_i = dC_i V^T; dV_j += P_ij dC_i.
        RowTimesColumnsAny(dci, 1.f, vt.data(), s.value_dim, padded, padded, dp.data());
        for (int64_t j = 0; j < T; ++j) {
          AddScaled(row[j], dci, s.value_dim, dv + (b * T + j) * vw + h * s.value_dim);
        }
        // The softmax's backward, then the scaled scores': dQ_i = dS_i K, dK_j += dS_ij Q_i.
        float weighted = 0;
        for (int64_t j = 0; j < T; ++j) weighted += dp[j] * row[j];
        for (int64_t j = 0; j < T; ++j) ds[j] = row[j] * (dp[j] - weighted) * scale;
        const float* qi = q + (b * T + i) * qk + h * s.key_dim;
        WeightedRows(ds.data(), kh, T, qk, s.key_dim, dq + (b * T + i) * qk + h * s.key_dim);
        for (int64_t j = 0; j < T; ++j) {
          AddScaled(ds[j], qi, s.key_dim, dk + (b * T + j) * qk + h * s.key_dim);
        }
      }
    }
  }
}

RINGWORK_VECTOR_CLONES void AttentionBackward(const AttentionShape& s, const float* q,
                                              const float* k, const float* v,
                                              const float* probabilities, const float* dcontext,
                                              float* dq, float* dk, float* dv) {
  const int64_t T = s.steps, qk = s.heads * s.key_dim, vw = s.heads * s.value_dim;
  const float scale = 1.f / std::sqrt(static_cast<float>(s.key_dim));
  if (FastPath(s)) {
    AttentionBackwardFast(s, q, k, v, probabilities, dcontext, dq, dk, dv);
    return;
  }
  std::fill(dq, dq + s.batch * T * qk, 0.f);
  std::fill(dk, dk + s.batch * T * qk, 0.f);
  std::fill(dv, dv + s.batch * T * vw, 0.f);
  std::vector<float> vt(static_cast<size_t>(s.value_dim * T)), dp(static_cast<size_t>(T));
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      Transpose(v + b * T * vw + h * s.value_dim, T, s.value_dim, vw, vt.data());
      const float* p = probabilities + (b * s.heads + h) * T * T;
      for (int64_t i = 0; i < T; ++i) {
        const float* row = p + i * T;
        const float* dci = dcontext + (b * T + i) * vw + h * s.value_dim;
        // dP_i = dC_i V^T; dV_j += P_ij dC_i.
        std::fill(dp.begin(), dp.end(), 0.f);
        for (int64_t d = 0; d < s.value_dim; ++d) {
          const float c = dci[d];
          const float* vd = vt.data() + d * T;
          for (int64_t j = 0; j < T; ++j) dp[j] += c * vd[j];
        }
        for (int64_t j = 0; j < T; ++j) {
          float* dvj = dv + (b * T + j) * vw + h * s.value_dim;
          const float pij = row[j];
          for (int64_t d = 0; d < s.value_dim; ++d) dvj[d] += pij * dci[d];
        }
        // The softmax's backward, then the scaled scores'.
        float weighted = 0;
        for (int64_t j = 0; j < T; ++j) weighted += dp[j] * row[j];
        const float* qi = q + (b * T + i) * qk + h * s.key_dim;
        float* dqi = dq + (b * T + i) * qk + h * s.key_dim;
        for (int64_t j = 0; j < T; ++j) {
          const float ds = row[j] * (dp[j] - weighted) * scale;
          const float* kj = k + (b * T + j) * qk + h * s.key_dim;
          float* dkj = dk + (b * T + j) * qk + h * s.key_dim;
          for (int64_t d = 0; d < s.key_dim; ++d) {
            dqi[d] += ds * kj[d];
            dkj[d] += ds * qi[d];
          }
        }
      }
    }
  }
}

}  // namespace ringwork
