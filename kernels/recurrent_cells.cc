#include "kernels/recurrent_cells.h"

#include "kernels/fast_exp.h"

namespace ringwork {
namespace {

inline float Sigmoid(float x) { return FastSigmoid(x); }
inline float Tanh(float x) { return FastTanh(x); }

}  // namespace

// Compiled for AVX-512, AVX2 and the baseline, picked at load time.
#define RINGWORK_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

RINGWORK_VECTOR_CLONES void LstmStepForward(int64_t batch, int64_t units, const float* __restrict a,
                                            const float* __restrict c_prev, float* __restrict act,
                                            float* __restrict c, float* __restrict tanh_c,
                                            float* __restrict h) {
  const int64_t u4 = 4 * units;
  for (int64_t b = 0; b < batch; ++b) {
    const float* ab = a + b * u4;
    float* g = act + b * u4;
    for (int64_t u = 0; u < units; ++u) {
      g[u] = Sigmoid(ab[u]);
      g[units + u] = Sigmoid(ab[units + u]);
      g[2 * units + u] = Tanh(ab[2 * units + u]);
      g[3 * units + u] = Sigmoid(ab[3 * units + u]);
      const int64_t at = b * units + u;
      c[at] = g[units + u] * c_prev[at] + g[u] * g[2 * units + u];
      tanh_c[at] = Tanh(c[at]);
      h[at] = g[3 * units + u] * tanh_c[at];
    }
  }
}

RINGWORK_VECTOR_CLONES void LstmStepBackward(int64_t batch, int64_t units, const float* dh,
                                             const float* dc_next, const float* act,
                                             const float* c_prev, const float* tanh_c, float* da,
                                             float* dc_prev) {
  const int64_t u4 = 4 * units;
  for (int64_t b = 0; b < batch; ++b) {
    const float* g = act + b * u4;
    float* d = da + b * u4;
    for (int64_t u = 0; u < units; ++u) {
      const int64_t at = b * units + u;
      const float i = g[u], f = g[units + u], cand = g[2 * units + u], o = g[3 * units + u];
      const float tc = tanh_c[at];
      const float dc = dc_next[at] + dh[at] * o * (1.f - tc * tc);
      d[u] = dc * cand * i * (1.f - i);
      d[units + u] = dc * c_prev[at] * f * (1.f - f);
      d[2 * units + u] = dc * i * (1.f - cand * cand);
      d[3 * units + u] = dh[at] * tc * o * (1.f - o);
      dc_prev[at] = dc * f;
    }
  }
}

RINGWORK_VECTOR_CLONES void GruGates(int64_t batch, int64_t units, const float* xw, const float* hu,
                                     float* act) {
  const int64_t u3 = 3 * units;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t u = 0; u < 2 * units; ++u) {
      act[b * u3 + u] = Sigmoid(xw[b * u3 + u] + hu[b * u3 + u]);
    }
  }
}

RINGWORK_VECTOR_CLONES void GruCandidate(int64_t batch, int64_t units, const float* xw,
                                         const float* recurrent, int64_t recurrent_stride,
                                         bool multiply_by_r, const float* h_prev, float* act,
                                         float* h) {
  const int64_t u3 = 3 * units;
  for (int64_t b = 0; b < batch; ++b) {
    float* g = act + b * u3;
    const float* rec = recurrent + b * recurrent_stride;
    for (int64_t u = 0; u < units; ++u) {
      const float r = g[units + u];
      const float hh = Tanh(xw[b * u3 + 2 * units + u] + (multiply_by_r ? r * rec[u] : rec[u]));
      g[2 * units + u] = hh;
      const float z = g[u];
      h[b * units + u] = z * h_prev[b * units + u] + (1.f - z) * hh;
    }
  }
}

RINGWORK_VECTOR_CLONES void GruStepBackward(int64_t batch, int64_t units, const float* dh,
                                            const float* act, const float* h_prev, float* da,
                                            float* dh_prev) {
  const int64_t u3 = 3 * units;
  for (int64_t b = 0; b < batch; ++b) {
    const float* g = act + b * u3;
    float* d = da + b * u3;
    for (int64_t u = 0; u < units; ++u) {
      const int64_t at = b * units + u;
      const float z = g[u], hh = g[2 * units + u];
      d[u] = dh[at] * (h_prev[at] - hh) * z * (1.f - z);
      d[2 * units + u] = dh[at] * (1.f - z) * (1.f - hh * hh);
      d[units + u] = 0.f;  // GruResetBackward, once dr is known.
      dh_prev[at] = dh[at] * z;
    }
  }
}

void GruResetBackward(int64_t batch, int64_t units, const float* dr, int64_t dr_stride,
                      const float* act, float* da) {
  const int64_t u3 = 3 * units;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t u = 0; u < units; ++u) {
      const float r = act[b * u3 + units + u];
      da[b * u3 + units + u] = dr[b * dr_stride + u] * r * (1.f - r);
    }
  }
}

}  // namespace ringwork
