#include "kernels/batch_norm.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

namespace ringwork {
namespace {

// The loops over rows x channels, compiled once per instruction set (cpu_isa.h).
// Each runs over the rows in order and is vectorised across channels, so every
// channel's sums add in the same order whatever the vector width: every variant
// gives the same bits (tested). gamma and beta are never null here (ones, zeros).
#define RW_LOOP __attribute__((always_inline)) inline

RW_LOOP void SumsLoop(const float* __restrict x, int64_t rows, int64_t channels,
                      double* __restrict sum, double* __restrict squares) {
  for (int64_t c = 0; c < channels; ++c) sum[c] = squares[c] = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* __restrict in = x + r * channels;
    for (int64_t c = 0; c < channels; ++c) {
      sum[c] += in[c];
      squares[c] += static_cast<double>(in[c]) * in[c];
    }
  }
}

RW_LOOP void CentredSquaresLoop(const float* __restrict x, const double* __restrict mean,
                                int64_t rows, int64_t channels, double* __restrict centred) {
  for (int64_t c = 0; c < channels; ++c) centred[c] = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* __restrict in = x + r * channels;
    for (int64_t c = 0; c < channels; ++c) {
      const double d = in[c] - mean[c];
      centred[c] += d * d;
    }
  }
}

RW_LOOP void NormalizeLoop(const float* __restrict x, const float* __restrict gamma,
                           const float* __restrict beta, const float* __restrict mean,
                           const float* __restrict rstd, int64_t rows, int64_t channels,
                           float* __restrict y, float* __restrict xhat) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* __restrict in = x + r * channels;
    float* __restrict h = xhat + r * channels;
    float* __restrict out = y + r * channels;
    for (int64_t c = 0; c < channels; ++c) {
      const float v = (in[c] - mean[c]) * rstd[c];
      h[c] = v;
      out[c] = gamma[c] * v + beta[c];
    }
  }
}

RW_LOOP void GradientSumsLoop(const float* __restrict dy, const float* __restrict xhat,
                              int64_t rows, int64_t channels, double* __restrict sum_dy,
                              double* __restrict sum_dy_xhat) {
  for (int64_t c = 0; c < channels; ++c) sum_dy[c] = sum_dy_xhat[c] = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* __restrict g = dy + r * channels;
    const float* __restrict h = xhat + r * channels;
    for (int64_t c = 0; c < channels; ++c) {
      sum_dy[c] += g[c];
      sum_dy_xhat[c] += static_cast<double>(g[c]) * h[c];
    }
  }
}

// dx = factor * (rows * dy - sum_dy - xhat * sum_dy_xhat), factor = gamma * rstd / rows.
RW_LOOP void InputGradientLoop(const float* __restrict dy, const float* __restrict xhat,
                               const double* __restrict factor, const double* __restrict sum_dy,
                               const double* __restrict sum_dy_xhat, int64_t rows, int64_t channels,
                               float* __restrict dx) {
  const double m = static_cast<double>(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const float* __restrict g = dy + r * channels;
    const float* __restrict h = xhat + r * channels;
    float* __restrict out = dx + r * channels;
    for (int64_t c = 0; c < channels; ++c) {
      out[c] = static_cast<float>(factor[c] * (m * g[c] - sum_dy[c] - h[c] * sum_dy_xhat[c]));
    }
  }
}

RW_LOOP void AffineLoop(const float* __restrict x, const float* __restrict scale,
                        const float* __restrict shift, int64_t rows, int64_t channels,
                        float* __restrict y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* __restrict in = x + r * channels;
    float* __restrict out = y + r * channels;
    for (int64_t c = 0; c < channels; ++c) out[c] = in[c] * scale[c] + shift[c];
  }
}

struct Loops {
  decltype(&SumsLoop) sums;
  decltype(&CentredSquaresLoop) centred_squares;
  decltype(&NormalizeLoop) normalize;
  decltype(&GradientSumsLoop) gradient_sums;
  decltype(&InputGradientLoop) input_gradient;
  decltype(&AffineLoop) affine;
};

// One set of variants per instruction set, each wrapping the same bodies.
#define RW_VARIANTS(SUFFIX, TARGET)                                                                \
  TARGET void Sums##SUFFIX(const float* x, int64_t r, int64_t c, double* s, double* q) {           \
    SumsLoop(x, r, c, s, q);                                                                       \
  }                                                                                                \
  TARGET void Centred##SUFFIX(const float* x, const double* m, int64_t r, int64_t c, double* o) {  \
    CentredSquaresLoop(x, m, r, c, o);                                                             \
  }                                                                                                \
  TARGET void Normalize##SUFFIX(const float* x, const float* g, const float* b, const float* m,    \
                                const float* s, int64_t r, int64_t c, float* y, float* h) {        \
    NormalizeLoop(x, g, b, m, s, r, c, y, h);                                                      \
  }                                                                                                \
  TARGET void GradientSums##SUFFIX(const float* dy, const float* h, int64_t r, int64_t c,          \
                                   double* s, double* q) {                                         \
    GradientSumsLoop(dy, h, r, c, s, q);                                                           \
  }                                                                                                \
  TARGET void InputGradient##SUFFIX(const float* dy, const float* h, const double* f,              \
                                    const double* s, const double* q, int64_t r, int64_t c,        \
                                    float* dx) {                                                   \
    InputGradientLoop(dy, h, f, s, q, r, c, dx);                                                   \
  }                                                                                                \
  TARGET void Affine##SUFFIX(const float* x, const float* s, const float* b, int64_t r, int64_t c, \
                             float* y) {                                                           \
    AffineLoop(x, s, b, r, c, y);                                                                  \
  }                                                                                                \
  const Loops kLoops##SUFFIX = {&Sums##SUFFIX,         &Centred##SUFFIX,       &Normalize##SUFFIX, \
                                &GradientSums##SUFFIX, &InputGradient##SUFFIX, &Affine##SUFFIX};

RW_VARIANTS(Avx512, __attribute__((target("avx512f"))))
RW_VARIANTS(Avx2, __attribute__((target("avx2"))))
RW_VARIANTS(Baseline, )

const Loops* LoopsFor(Isa isa) {
  switch (isa) {
    case Isa::kAvx512:
      return &kLoopsAvx512;
    case Isa::kAvx2:
      return &kLoopsAvx2;
    case Isa::kBaseline:
      break;
  }
  return &kLoopsBaseline;
}

std::atomic<const Loops*> forced_loops{nullptr};

const Loops& Use() {
  static const Loops* const best = PickForCpu(&kLoopsAvx512, &kLoopsAvx2, &kLoopsBaseline);
  const Loops* forced = forced_loops.load(std::memory_order_relaxed);
  return forced != nullptr ? *forced : *best;
}

// gamma or ones, beta or zeros: per-channel parameters the loops can always read.
struct Affine {
  Affine(const float* gamma, const float* beta, int64_t channels) {
    if (gamma == nullptr) ones.assign(static_cast<size_t>(channels), 1.f);
    if (beta == nullptr) zeros.assign(static_cast<size_t>(channels), 0.f);
    scale = gamma != nullptr ? gamma : ones.data();
    shift = beta != nullptr ? beta : zeros.data();
  }
  std::vector<float> ones, zeros;
  const float* scale;
  const float* shift;
};

}  // namespace

void UseBatchNormIsaForTesting(Isa isa) { forced_loops.store(LoopsFor(isa)); }

void BatchNormTrain(const float* x, const float* gamma, const float* beta, int64_t rows,
                    int64_t channels, float epsilon, float* y, float* xhat, float* rstd,
                    double* sums) {
  BatchNormSums(x, rows, channels, sums);
  const double* sum = sums + 1;
  std::vector<double> mean(static_cast<size_t>(channels)), centred(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) mean[c] = sum[c] / static_cast<double>(rows);
  // Centred second pass (as exact as the data allows, whatever its offset), row
  // by row through memory.
  Use().centred_squares(x, mean.data(), rows, channels, centred.data());
  std::vector<float> mean_f(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    mean_f[c] = static_cast<float>(mean[c]);
    rstd[c] = static_cast<float>(1.0 / std::sqrt(centred[c] / static_cast<double>(rows) + epsilon));
  }
  BatchNormNormalize(x, gamma, beta, mean_f.data(), rstd, rows, channels, y, xhat);
}

void BatchNormSums(const float* x, int64_t rows, int64_t channels, double* sums) {
  sums[0] = static_cast<double>(rows);
  Use().sums(x, rows, channels, sums + 1, sums + 1 + channels);
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
  const Affine affine(gamma, beta, channels);
  Use().normalize(x, affine.scale, affine.shift, mean, rstd, rows, channels, y, xhat);
}

void BatchNormGradientSums(const float* dy, const float* xhat, int64_t rows, int64_t channels,
                           double scale, double* sums) {
  Use().gradient_sums(dy, xhat, rows, channels, sums, sums + channels);
  for (int64_t c = 0; c < 2 * channels; ++c) sums[c] *= scale;
}

void BatchNormInputGradient(const float* dy, const float* gamma, const float* xhat,
                            const float* rstd, const double* sums, int64_t rows, int64_t channels,
                            float* dx) {
  const double m = static_cast<double>(rows);
  std::vector<double> factor(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    factor[c] = (gamma != nullptr ? gamma[c] : 1.f) * static_cast<double>(rstd[c]) / m;
  }
  Use().input_gradient(dy, xhat, factor.data(), sums, sums + channels, rows, channels, dx);
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
    const float inv =
        static_cast<float>(1.0 / std::sqrt(static_cast<double>(moving_variance[c]) + epsilon));
    scale[c] = (gamma != nullptr ? gamma[c] : 1.f) * inv;
    shift[c] = (beta != nullptr ? beta[c] : 0.f) - moving_mean[c] * scale[c];
  }
  Use().affine(x, scale.data(), shift.data(), rows, channels, y);
}

void BatchNormBackward(const float* dy, const float* gamma, const float* xhat, const float* rstd,
                       int64_t rows, int64_t channels, float* dx, float* dgamma, float* dbeta) {
  std::vector<double> sums(static_cast<size_t>(2 * channels));
  const double* sum_dy = sums.data();
  const double* sum_dy_xhat = sums.data() + channels;
  Use().gradient_sums(dy, xhat, rows, channels, sums.data(), sums.data() + channels);
  for (int64_t c = 0; c < channels; ++c) {
    if (dgamma != nullptr) dgamma[c] = static_cast<float>(sum_dy_xhat[c]);
    if (dbeta != nullptr) dbeta[c] = static_cast<float>(sum_dy[c]);
  }
  if (dx == nullptr) return;
  BatchNormInputGradient(dy, gamma, xhat, rstd, sums.data(), rows, channels, dx);
}

}  // namespace ringwork
