#include "kernels/layer_norm.h"

#include <cmath>
#include <vector>

namespace ringwork {

void LayerNormForward(const float* x, const float* gamma, const float* beta, int64_t rows,
                      int64_t dim, float epsilon, float* y, float* xhat, float* rstd) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * dim;
    double sum = 0;
    for (int64_t i = 0; i < dim; ++i) sum += in[i];
    const double mean = sum / static_cast<double>(dim);
    double squares = 0;
    for (int64_t i = 0; i < dim; ++i) squares += (in[i] - mean) * (in[i] - mean);
    const float inv =
        static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(dim) + epsilon));
    rstd[r] = inv;
    float* h = xhat + r * dim;
    float* out = y + r * dim;
    for (int64_t i = 0; i < dim; ++i) {
      h[i] = static_cast<float>(in[i] - mean) * inv;
      out[i] = (gamma != nullptr ? gamma[i] : 1.f) * h[i] + (beta != nullptr ? beta[i] : 0.f);
    }
  }
}

void LayerNormBackward(const float* dy, const float* gamma, const float* xhat, const float* rstd,
                       int64_t rows, int64_t dim, float* dx, float* dgamma, float* dbeta) {
  std::vector<double> dg(static_cast<size_t>(dim), 0.0), db(static_cast<size_t>(dim), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* g = dy + r * dim;
    const float* h = xhat + r * dim;
    double sum_dh = 0, sum_dh_h = 0;
    for (int64_t i = 0; i < dim; ++i) {
      dg[i] += static_cast<double>(g[i]) * h[i];
      db[i] += g[i];
      const double dh = static_cast<double>(g[i]) * (gamma != nullptr ? gamma[i] : 1.f);
      sum_dh += dh;
      sum_dh_h += dh * h[i];
    }
    if (dx == nullptr) continue;
    // dx = rstd / dim * (dim * dh - sum(dh) - xhat * sum(dh * xhat))
    const double n = static_cast<double>(dim);
    float* out = dx + r * dim;
    for (int64_t i = 0; i < dim; ++i) {
      const double dh = static_cast<double>(g[i]) * (gamma != nullptr ? gamma[i] : 1.f);
      out[i] = static_cast<float>(rstd[r] / n * (n * dh - sum_dh - h[i] * sum_dh_h));
    }
  }
  for (int64_t i = 0; i < dim; ++i) {
    if (dgamma != nullptr) dgamma[i] = static_cast<float>(dg[i]);
    if (dbeta != nullptr) dbeta[i] = static_cast<float>(db[i]);
  }
}

}  // namespace ringwork
