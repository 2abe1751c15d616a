#include "kernels/fast_exp.h"

#include <catch2/catch.hpp>
#include <cmath>

namespace ringwork {
namespace {

TEST_CASE("FastExp, FastTanh and FastSigmoid agree with libm", "[fast_exp]") {
  double worst_exp = 0, worst_tanh = 0, worst_sigmoid = 0;
  for (double x = -87.0; x <= 88.0; x += 0.0137) {
    const float f = static_cast<float>(x);
    worst_exp = std::max(worst_exp, std::fabs(FastExp(f) / std::exp(double{f}) - 1));
  }
  for (double x = -20.0; x <= 20.0; x += 0.00123) {
    const float f = static_cast<float>(x);
    const double t = std::tanh(double{f});
    // Relative to tanh itself, also near 0 (the odd polynomial there).
    if (t != 0) worst_tanh = std::max(worst_tanh, std::fabs(FastTanh(f) - t) / std::fabs(t));
    worst_sigmoid =
        std::max(worst_sigmoid, std::fabs(FastSigmoid(f) - 1 / (1 + std::exp(-double{f}))));
  }
  INFO("exp " << worst_exp << ", tanh " << worst_tanh << ", sigmoid " << worst_sigmoid);
  CHECK(worst_exp < 1e-6);
  CHECK(worst_tanh < 1e-6);
  CHECK(worst_sigmoid < 1e-7);
  CHECK(FastTanh(1e-20f) == 1e-20f);
  // Clamped to finite normal floats at both ends; NaN stays NaN.
  CHECK(std::isfinite(FastExp(88.5f)));
  CHECK(std::isfinite(FastExp(1e30f)));
  CHECK(std::isnormal(FastExp(-1e30f)));
  CHECK(std::isnan(FastExp(NAN)));
  CHECK(std::isnan(FastTanh(NAN)));
  CHECK(FastSigmoid(-1000.f) >= 0.f);
  CHECK(FastSigmoid(1000.f) == 1.f);
  CHECK(FastTanh(-50.f) == -1.f);
  CHECK(FastTanh(1e30f) == 1.f);  // Not 0 x inf from the polynomial's side.
  CHECK(FastTanh(-1e30f) == -1.f);
}

}  // namespace
}  // namespace ringwork
