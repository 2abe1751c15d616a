#include "kernels/reference/sequence_reference.h"

#include <cmath>
#include <vector>

namespace ringwork {
namespace reference {
namespace {

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

}  // namespace

void LstmStepForward(int64_t batch, int64_t units, const float* a, const float* c_prev, float* act,
                     float* c, float* tanh_c, float* h) {
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t u = 0; u < units; ++u) {
      const float* pre = a + b * 4 * units;
      float* gate = act + b * 4 * units;
      const double i = Sigmoid(pre[u]), f = Sigmoid(pre[units + u]);
      const double g = std::tanh(static_cast<double>(pre[2 * units + u]));
      const double o = Sigmoid(pre[3 * units + u]);
      const int64_t at = b * units + u;
      const double cell = f * c_prev[at] + i * g;
      gate[u] = static_cast<float>(i);
      gate[units + u] = static_cast<float>(f);
      gate[2 * units + u] = static_cast<float>(g);
      gate[3 * units + u] = static_cast<float>(o);
      c[at] = static_cast<float>(cell);
      tanh_c[at] = static_cast<float>(std::tanh(cell));
      h[at] = static_cast<float>(o * std::tanh(cell));
    }
  }
}

void LstmStepBackward(int64_t batch, int64_t units, const float* dh, const float* dc_next,
                      const float* act, const float* c_prev, const float* tanh_c, float* da,
                      float* dc_prev) {
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t u = 0; u < units; ++u) {
      const float* gate = act + b * 4 * units;
      float* d = da + b * 4 * units;
      const int64_t at = b * units + u;
      const double i = gate[u], f = gate[units + u], g = gate[2 * units + u],
                   o = gate[3 * units + u], tc = tanh_c[at];
      // h = o tanh(c): dh reaches o and, through tanh, c.
      const double d_o = dh[at] * tc;
      const double dc = dc_next[at] + dh[at] * o * (1 - tc * tc);
      // c = f c_prev + i g.
      const double di = dc * g, df = dc * c_prev[at], dg = dc * i;
      d[u] = static_cast<float>(di * i * (1 - i));
      d[units + u] = static_cast<float>(df * f * (1 - f));
      d[2 * units + u] = static_cast<float>(dg * (1 - g * g));
      d[3 * units + u] = static_cast<float>(d_o * o * (1 - o));
      dc_prev[at] = static_cast<float>(dc * f);
    }
  }
}

void GruStepForward(int64_t batch, int64_t units, const float* xw, const float* hu,
                    const float* recurrent, int64_t recurrent_stride, bool multiply_by_r,
                    const float* h_prev, float* act, float* h) {
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t u = 0; u < units; ++u) {
      const int64_t row = b * 3 * units, at = b * units + u;
      const double z = Sigmoid(static_cast<double>(xw[row + u]) + hu[row + u]);
      const double r = Sigmoid(static_cast<double>(xw[row + units + u]) + hu[row + units + u]);
      const double rec = recurrent[b * recurrent_stride + u];
      const double hh = std::tanh(xw[row + 2 * units + u] + (multiply_by_r ? r * rec : rec));
      act[row + u] = static_cast<float>(z);
      act[row + units + u] = static_cast<float>(r);
      act[row + 2 * units + u] = static_cast<float>(hh);
      h[at] = static_cast<float>(z * h_prev[at] + (1 - z) * hh);
    }
  }
}

void GruStepBackward(int64_t batch, int64_t units, const float* dh, const float* act,
                     const float* h_prev, const float* dr, int64_t dr_stride, float* da,
                     float* dh_prev) {
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t u = 0; u < units; ++u) {
      const int64_t row = b * 3 * units, at = b * units + u;
      const double z = act[row + u], r = act[row + units + u], hh = act[row + 2 * units + u];
      // h = z h_prev + (1 - z) hh.
      da[row + u] = static_cast<float>(dh[at] * (h_prev[at] - hh) * z * (1 - z));
      da[row + 2 * units + u] = static_cast<float>(dh[at] * (1 - z) * (1 - hh * hh));
      da[row + units + u] = static_cast<float>(dr[b * dr_stride + u] * r * (1 - r));
      dh_prev[at] = static_cast<float>(dh[at] * z);
    }
  }
}

void AttentionForward(const AttentionShape& s, const float* q, const float* k, const float* v,
                      float* probabilities, float* context, const uint8_t* key_mask) {
  const int64_t T = s.steps, qk = s.heads * s.key_dim, vw = s.heads * s.value_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.key_dim));
  std::vector<double> scores(static_cast<size_t>(T));
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      for (int64_t i = 0; i < T; ++i) {
        double top = -INFINITY;
        for (int64_t j = 0; j < T; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < s.key_dim; ++d) {
            dot += static_cast<double>(q[(b * T + i) * qk + h * s.key_dim + d]) *
                   k[(b * T + j) * qk + h * s.key_dim + d];
          }
          scores[j] = dot * scale;
          if (key_mask != nullptr && key_mask[b * T + j] == 0) scores[j] += -1e9;
          top = std::max(top, scores[j]);
        }
        double total = 0;
        for (int64_t j = 0; j < T; ++j) total += std::exp(scores[j] - top);
        float* p = probabilities + ((b * s.heads + h) * T + i) * T;
        for (int64_t j = 0; j < T; ++j)
          p[j] = static_cast<float>(std::exp(scores[j] - top) / total);
        for (int64_t d = 0; d < s.value_dim; ++d) {
          double sum = 0;
          for (int64_t j = 0; j < T; ++j)
            sum += p[j] * static_cast<double>(v[(b * T + j) * vw + h * s.value_dim + d]);
          context[(b * T + i) * vw + h * s.value_dim + d] = static_cast<float>(sum);
        }
      }
    }
  }
}

void AttentionBackward(const AttentionShape& s, const float* q, const float* k, const float* v,
                       const float* probabilities, const float* dcontext, float* dq, float* dk,
                       float* dv) {
  const int64_t T = s.steps, qk = s.heads * s.key_dim, vw = s.heads * s.value_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.key_dim));
  std::vector<double> dq_sum(static_cast<size_t>(s.batch * T * qk), 0.0),
      dk_sum(dq_sum.size(), 0.0), dv_sum(static_cast<size_t>(s.batch * T * vw), 0.0),
      dscores(static_cast<size_t>(T));
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      for (int64_t i = 0; i < T; ++i) {
        const float* p = probabilities + ((b * s.heads + h) * T + i) * T;
        const float* dc = dcontext + (b * T + i) * vw + h * s.value_dim;
        // context_i = sum_j p_ij v_j.
        double weighted = 0;
        for (int64_t j = 0; j < T; ++j) {
          double dp = 0;
          for (int64_t d = 0; d < s.value_dim; ++d) {
            dp += static_cast<double>(dc[d]) * v[(b * T + j) * vw + h * s.value_dim + d];
            dv_sum[(b * T + j) * vw + h * s.value_dim + d] += p[j] * static_cast<double>(dc[d]);
          }
          dscores[j] = dp;
          weighted += p[j] * dp;
        }
        // Through the softmax, then the scaled dot products.
        for (int64_t j = 0; j < T; ++j) {
          const double ds = p[j] * (dscores[j] - weighted) * scale;
          for (int64_t d = 0; d < s.key_dim; ++d) {
            dq_sum[(b * T + i) * qk + h * s.key_dim + d] +=
                ds * k[(b * T + j) * qk + h * s.key_dim + d];
            dk_sum[(b * T + j) * qk + h * s.key_dim + d] +=
                ds * q[(b * T + i) * qk + h * s.key_dim + d];
          }
        }
      }
    }
  }
  for (size_t e = 0; e < dq_sum.size(); ++e) {
    dq[e] = static_cast<float>(dq_sum[e]);
    dk[e] = static_cast<float>(dk_sum[e]);
  }
  for (size_t e = 0; e < dv_sum.size(); ++e) dv[e] = static_cast<float>(dv_sum[e]);
}

}  // namespace reference
}  // namespace ringwork
