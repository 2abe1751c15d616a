#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/fast_exp.h"

namespace ringwork {
namespace {

// rows x cols (row stride `stride`) -> cols x rows, contiguous.
void Transpose(const float* in, int64_t rows, int64_t cols, int64_t stride, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) out[c * rows + r] = in[r * stride + c];
  }
}

}  // namespace

// Compiled for AVX-512, AVX2 and the baseline, picked at load time (the rows are
// short: wider vectors pay off).
#define RINGWORK_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

RINGWORK_VECTOR_CLONES void AttentionForward(const AttentionShape& s, const float* q,
                                             const float* k, const float* v, float* probabilities,
                                             float* context) {
  const int64_t T = s.steps, qk = s.heads * s.key_dim, vw = s.heads * s.value_dim;
  const float scale = 1.f / std::sqrt(static_cast<float>(s.key_dim));
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
        const float largest = *std::max_element(row, row + T);
        float sum = 0;
        for (int64_t j = 0; j < T; ++j) {
          row[j] = FastExp(row[j] - largest);
          sum += row[j];
        }
        const float inverse = 1.f / sum;
        for (int64_t j = 0; j < T; ++j) row[j] *= inverse;
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

RINGWORK_VECTOR_CLONES void AttentionBackward(const AttentionShape& s, const float* q,
                                              const float* k, const float* v,
                                              const float* probabilities, const float* dcontext,
                                              float* dq, float* dk, float* dv) {
  const int64_t T = s.steps, qk = s.heads * s.key_dim, vw = s.heads * s.value_dim;
  const float scale = 1.f / std::sqrt(static_cast<float>(s.key_dim));
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
