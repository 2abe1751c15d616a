#include "kernels/batch_norm.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu_isa.h"
#include "kernels/test_util.h"

namespace ringwork {
namespace {

// Everything the batch-norm loops compute for one input, to compare bit for bit.
struct Outputs {
  std::vector<float> y, xhat, rstd, infer, dx, dgamma, dbeta, sync_y, sync_dx;
  std::vector<double> sums, gradient_sums;
};

Outputs RunAll(int64_t rows, int64_t channels, bool affine) {
  const int64_t n = rows * channels;
  // An offset far from zero: the centred pass must keep the variance exact.
  const std::vector<float> x = RandomVector(n, 7, 99.f, 101.f);
  const std::vector<float> dy = RandomVector(n, 8);
  const std::vector<float> gamma = RandomVector(channels, 9, 0.5f, 1.5f);
  const std::vector<float> beta = RandomVector(channels, 10);
  const std::vector<float> moving_variance = RandomVector(channels, 11, 0.1f, 2.f);
  const float* g = affine ? gamma.data() : nullptr;
  const float* b = affine ? beta.data() : nullptr;
  Outputs o;
  o.y.resize(n), o.xhat.resize(n), o.rstd.resize(channels), o.sums.resize(1 + 2 * channels);
  BatchNormTrain(x.data(), g, b, rows, channels, 1e-3f, o.y.data(), o.xhat.data(), o.rstd.data(),
                 o.sums.data());
  o.infer.resize(n);
  BatchNormInfer(x.data(), g, b, beta.data(), moving_variance.data(), rows, channels, 1e-3f,
                 o.infer.data());
  o.dx.resize(n), o.dgamma.resize(channels), o.dbeta.resize(channels);
  BatchNormBackward(dy.data(), g, o.xhat.data(), o.rstd.data(), rows, channels, o.dx.data(),
                    o.dgamma.data(), o.dbeta.data());
  // SyncBatchNormalization's pieces, as one replica of one.
  std::vector<float> mean(channels), rstd(channels);
  BatchNormStatisticsFromSums(o.sums.data(), channels, 1e-3f, mean.data(), rstd.data());
  o.sync_y.resize(n);
  std::vector<float> sync_xhat(n);
  BatchNormNormalize(x.data(), g, b, mean.data(), rstd.data(), rows, channels, o.sync_y.data(),
                     sync_xhat.data());
  o.gradient_sums.resize(2 * channels);
  BatchNormGradientSums(dy.data(), sync_xhat.data(), rows, channels, 0.5, o.gradient_sums.data());
  o.sync_dx.resize(n);
  BatchNormInputGradient(dy.data(), g, sync_xhat.data(), rstd.data(), o.gradient_sums.data(), rows,
                         channels, o.sync_dx.data());
  return o;
}

template <typename T>
bool SameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(T) * a.size()) == 0;
}

TEST_CASE("batch norm gives the same bits with every instruction set the CPU has", "[batch_norm]") {
  for (const int64_t channels : {1, 3, 16, 19, 64}) {
    for (const bool affine : {true, false}) {
      UseBatchNormIsaForTesting(Isa::kBaseline);
      const Outputs want = RunAll(37, channels, affine);
      for (const Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
        if (!IsaSupported(isa)) {
          WARN("this CPU lacks instruction set " << static_cast<int>(isa) << ": not compared");
          continue;
        }
        UseBatchNormIsaForTesting(isa);
        const Outputs got = RunAll(37, channels, affine);
        INFO("channels " << channels << ", affine " << affine << ", isa " << static_cast<int>(isa));
        CHECK(SameBits(got.y, want.y));
        CHECK(SameBits(got.xhat, want.xhat));
        CHECK(SameBits(got.rstd, want.rstd));
        CHECK(SameBits(got.sums, want.sums));
        CHECK(SameBits(got.infer, want.infer));
        CHECK(SameBits(got.dx, want.dx));
        CHECK(SameBits(got.dgamma, want.dgamma));
        CHECK(SameBits(got.dbeta, want.dbeta));
        CHECK(SameBits(got.sync_y, want.sync_y));
        CHECK(SameBits(got.gradient_sums, want.gradient_sums));
        CHECK(SameBits(got.sync_dx, want.sync_dx));
      }
    }
  }
  UseBatchNormIsaForTesting(IsaSupported(Isa::kAvx512) ? Isa::kAvx512
                            : IsaSupported(Isa::kAvx2) ? Isa::kAvx2
                                                       : Isa::kBaseline);
}

// The textbook formulas in double, one channel at a time.
TEST_CASE("batch norm follows the textbook formulas", "[batch_norm]") {
  const int64_t rows = 50, channels = 19, n = rows * channels;
  const Outputs got = RunAll(rows, channels, /*affine=*/true);
  const std::vector<float> x = RandomVector(n, 7, 99.f, 101.f), dy = RandomVector(n, 8);
  const std::vector<float> gamma = RandomVector(channels, 9, 0.5f, 1.5f),
                           beta = RandomVector(channels, 10);
  const std::vector<float> moving_mean = beta,
                           moving_variance = RandomVector(channels, 11, 0.1f, 2.f);
  std::vector<float> y(n), dx(n), dgamma(channels), dbeta(channels), infer(n);
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t r = 0; r < rows; ++r) {
      infer[r * channels + c] = static_cast<float>(
          gamma[c] * (x[r * channels + c] - moving_mean[c]) / std::sqrt(moving_variance[c] + 1e-3) +
          beta[c]);
    }
    double mean = 0, var = 0;
    for (int64_t r = 0; r < rows; ++r) mean += x[r * channels + c];
    mean /= rows;
    for (int64_t r = 0; r < rows; ++r) var += std::pow(x[r * channels + c] - mean, 2);
    var /= rows;
    const double rstd = 1 / std::sqrt(var + 1e-3);
    double sum_dy = 0, sum_dy_h = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const double h = (x[r * channels + c] - mean) * rstd;
      y[r * channels + c] = static_cast<float>(gamma[c] * h + beta[c]);
      sum_dy += dy[r * channels + c];
      sum_dy_h += dy[r * channels + c] * h;
    }
    dgamma[c] = static_cast<float>(sum_dy_h), dbeta[c] = static_cast<float>(sum_dy);
    for (int64_t r = 0; r < rows; ++r) {
      const double h = (x[r * channels + c] - mean) * rstd;
      dx[r * channels + c] = static_cast<float>(
          gamma[c] * rstd / rows * (rows * dy[r * channels + c] - sum_dy - h * sum_dy_h));
    }
  }
  // float inputs near 100 with a spread of 1: about 1e-7 x 100 / 0.6 of rounding.
  CHECK(MaxRelativeError(got.y, y) < 3e-5);
  CHECK(MaxRelativeError(got.dx, dx) < 1e-5);
  CHECK(MaxRelativeError(got.dgamma, dgamma) < 1e-4);
  CHECK(MaxRelativeError(got.dbeta, dbeta) < 1e-6);
  CHECK(MaxRelativeError(got.sync_y, y) < 3e-5);
  CHECK(MaxRelativeError(got.infer, infer) < 1e-5);
}

}  // namespace
}  // namespace ringwork
