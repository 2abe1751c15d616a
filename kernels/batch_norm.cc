#include "kernels/batch_norm.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace ringwork {

void BatchNormTrain(const float* x, const float* gamma, const float* beta, int64_t rows,
                    int64_t channels, float epsilon, float* y, float* xhat, float* rstd,
                    double* sums) {
  BatchNormSums(x, rows, channels, sums);
  const double* sum = sums + 1;
  std::vector<double> mean(static_cast<size_t>(channels)), centred(static_cast<size_t>(channels), 0.0);
  for (int64_t c = 0; c < channels; ++c) mean[c] = sum[c] / static_cast<double>(rows);
  // Centred second pass (as exact as the data allows, whatever its offset), row
  // by row through memory.
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * channels;
    for (int64_t c = 0; c < channels; ++c) {
      const double d = in[c] - mean[c];
      centred[c] += d * d;
    }
  }
  std::vector<float> mean_f(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    mean_f[c] = static_cast<float>(mean[c]);
    rstd[c] = static_cast<float>(1.0 / std::sqrt(centred[c] / static_cast<double>(rows) + epsilon));
  }
  BatchNormNormalize(x, gamma, beta, mean_f.data(), rstd, rows, channels, y, xhat);
}

void BatchNormSums(const float* x, int64_t rows, int64_t channels, double* sums) {
  sums[0] = static_cast<double>(rows);
  double* sum = sums + 1;
  double* squares = sums + 1 + channels;
  for (int64_t c = 0; c < channels; ++c) sum[c] = squares[c] = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * channels;
    for (int64_t c = 0; c < channels; ++c) {
      sum[c] += in[c];
      squares[c] += static_cast<double>(in[c]) * in[c];
    }
  }
}

void BatchNormStatisticsFromSums(const double* sums, int64_t channels, float epsilon, float* mean,
                                 float* rstd) {
  const double n = std::max(sums[0], 1.0);
  for (int64_t c = 0; c < channels; ++c) {
    const double m = sums[1 + c] / n;
    const double variance = std::max(0.0, sums[1 + channels + c] / n - m * m);
    mean[c] = static_cast<float>(m);
    rstd[c] = static_cast<float>(1.0 / std::sqrt(variance + epsilon));
  }
}

void BatchNormNormalize(const float* x, const float* gamma, const float* beta, const float* mean,
                        const float* rstd, int64_t rows, int64_t channels, float* y, float* xhat) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * channels;
    float* h = xhat + r * channels;
    float* out = y + r * channels;
    for (int64_t c = 0; c < channels; ++c) {
      h[c] = (in[c] - mean[c]) * rstd[c];
      out[c] = (gamma != nullptr ? gamma[c] : 1.f) * h[c] + (beta != nullptr ? beta[c] : 0.f);
    }
  }
}

void BatchNormGradientSums(const float* dy, const float* xhat, int64_t rows, int64_t channels,
                           double scale, double* sums) {
  for (int64_t c = 0; c < 2 * channels; ++c) sums[c] = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < channels; ++c) {
      sums[c] += dy[r * channels + c];
      sums[channels + c] += static_cast<double>(dy[r * channels + c]) * xhat[r * channels + c];
    }
  }
  for (int64_t c = 0; c < 2 * channels; ++c) sums[c] *= scale;
}

void BatchNormInputGradient(const float* dy, const float* gamma, const float* xhat, const float* rstd,
                            const double* sums, int64_t rows, int64_t channels, float* dx) {
  const double m = static_cast<double>(rows);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < channels; ++c) {
      const double g = (gamma != nullptr ? gamma[c] : 1.f) * static_cast<double>(rstd[c]) / m;
      dx[r * channels + c] = static_cast<float>(
          g * (m * dy[r * channels + c] - sums[c] - xhat[r * channels + c] * sums[channels + c]));
    }
  }
}

void UpdateMovingStatistics(const double* totals, int64_t channels, float momentum,
                            float* moving_mean, float* moving_variance) {
  const double n = totals[0];
  if (!(n > 0)) return;
  const double keep = momentum;
  for (int64_t c = 0; c < channels; ++c) {
    const double mean = totals[1 + c] / n;
    const double variance = std::max(0.0, totals[1 + channels + c] / n - mean * mean);
    moving_mean[c] = static_cast<float>(moving_mean[c] * keep + mean * (1 - keep));
    moving_variance[c] = static_cast<float>(moving_variance[c] * keep + variance * (1 - keep));
  }
}

void BatchNormInfer(const float* x, const float* gamma, const float* beta, const float* moving_mean,
                    const float* moving_variance, int64_t rows, int64_t channels, float epsilon,
                    float* y) {
  std::vector<float> scale(static_cast<size_t>(channels)), shift(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    const float inv = static_cast<float>(1.0 / std::sqrt(static_cast<double>(moving_variance[c]) + epsilon));
    scale[c] = (gamma != nullptr ? gamma[c] : 1.f) * inv;
    shift[c] = (beta != nullptr ? beta[c] : 0.f) - moving_mean[c] * scale[c];
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < channels; ++c) y[r * channels + c] = x[r * channels + c] * scale[c] + shift[c];
  }
}

void BatchNormBackward(const float* dy, const float* gamma, const float* xhat, const float* rstd,
                       int64_t rows, int64_t channels, float* dx, float* dgamma, float* dbeta) {
  std::vector<double> sum_dy(static_cast<size_t>(channels), 0.0), sum_dy_h(static_cast<size_t>(channels), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < channels; ++c) {
      sum_dy[c] += dy[r * channels + c];
      sum_dy_h[c] += static_cast<double>(dy[r * channels + c]) * xhat[r * channels + c];
    }
  }
  for (int64_t c = 0; c < channels; ++c) {
    if (dgamma != nullptr) dgamma[c] = static_cast<float>(sum_dy_h[c]);
    if (dbeta != nullptr) dbeta[c] = static_cast<float>(sum_dy[c]);
  }
  if (dx == nullptr) return;
  // dx = gamma * rstd / M * (M * dy - sum(dy) - xhat * sum(dy * xhat))
  const double m = static_cast<double>(rows);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < channels; ++c) {
      const double g = (gamma != nullptr ? gamma[c] : 1.f) * static_cast<double>(rstd[c]) / m;
      dx[r * channels + c] = static_cast<float>(
          g * (m * dy[r * channels + c] - sum_dy[c] - xhat[r * channels + c] * sum_dy_h[c]));
    }
  }
}

}  // namespace ringwork
