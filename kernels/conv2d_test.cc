// oneDNN conv2d kernels against their reference twins, in NHWC / HWIO.
#include "kernels/conv2d.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/reference/reference_ops.h"
#include "kernels/test_util.h"

namespace ringwork {
namespace {

std::vector<Conv2DShape> Shapes() {
  return {
      {2, 7, 6, 3, 4, 3, 3, 1, 1, Padding::kValid},
      {2, 7, 6, 3, 4, 3, 3, 1, 1, Padding::kSame},
      {1, 9, 9, 2, 5, 5, 5, 2, 2, Padding::kSame},
      {3, 8, 8, 4, 6, 1, 1, 1, 1, Padding::kValid},
      {2, 10, 7, 3, 2, 3, 2, 2, 3, Padding::kValid},
      {4, 28, 28, 1, 16, 3, 3, 1, 1, Padding::kSame},
      {4, 14, 14, 16, 32, 3, 3, 1, 1, Padding::kSame},
      // Dilated, rectangular: taps 2 and 3 apart.
      {2, 11, 12, 3, 4, 3, 2, 1, 1, Padding::kValid, 2, 3},
      {2, 9, 10, 2, 3, 3, 3, 2, 1, Padding::kSame, 2, 2},
      {1, 1, 15, 3, 4, 1, 4, 1, 2, Padding::kSame, 1, 3},  // Conv1D's
  };
}

void Compare(Precision precision, const Conv2DShape& s, double tolerance) {
  KernelContext ctx({1, precision});
  auto kernel = Conv2DKernel::Create(ctx, s);
  REQUIRE(kernel.ok());
  const int64_t xs = s.batch * s.height * s.width * s.in_channels;
  const int64_t ws = s.kernel_h * s.kernel_w * s.in_channels * s.out_channels;
  const int64_t ys = s.batch * s.rows().out * s.cols().out * s.out_channels;
  auto x = RandomVector(xs, 11), w = RandomVector(ws, 12), b = RandomVector(s.out_channels, 13);
  auto dy = RandomVector(ys, 14);
  std::vector<float> y(ys), dx(xs), dw(ws), db(s.out_channels);
  std::vector<float> ry(ys), rdx(xs), rdw(ws), rdb(s.out_channels);
  (*kernel)->Forward(ctx, x.data(), w.data(), b.data(), y.data());
  (*kernel)->BackwardData(ctx, dy.data(), w.data(), dx.data());
  (*kernel)->BackwardWeights(ctx, x.data(), dy.data(), dw.data(), db.data());
  reference::Conv2DForward(s, x.data(), w.data(), b.data(), ry.data());
  reference::Conv2DBackwardData(s, dy.data(), w.data(), rdx.data());
  reference::Conv2DBackwardWeights(s, x.data(), dy.data(), rdw.data(), rdb.data());
  INFO(PrecisionName(precision) << " " << s.height << "x" << s.width << "x" << s.in_channels
                                << " -> " << s.out_channels << ", kernel " << s.kernel_h << "x"
                                << s.kernel_w << ", stride " << s.stride_h << "x" << s.stride_w
                                << ", dilation " << s.dilation_h << "x" << s.dilation_w << ", "
                                << PaddingName(s.padding));
  const double taps = std::sqrt(s.kernel_h * s.kernel_w * s.in_channels);
  CHECK(MaxRelativeError(y, ry, taps) < tolerance);
  CHECK(MaxRelativeError(dx, rdx, std::sqrt(s.kernel_h * s.kernel_w * s.out_channels)) < tolerance);
  CHECK(MaxRelativeError(dw, rdw, std::sqrt(s.batch * s.rows().out * s.cols().out)) < tolerance);
  CHECK(MaxRelativeError(db, rdb, std::sqrt(s.batch * s.rows().out * s.cols().out)) < tolerance);
}

TEST_CASE("conv2d kernels match the reference in float32", "[conv2d]") {
  for (const Conv2DShape& s : Shapes()) Compare(Precision::kFloat32, s, 1e-5);
}

TEST_CASE("conv2d kernels match the reference in bfloat16 within its precision", "[conv2d]") {
  for (const Conv2DShape& s : Shapes()) Compare(Precision::kBFloat16, s, 2e-2);
}

TEST_CASE("prediction's forward pass, ReLU fused or not, matches the reference", "[conv2d]") {
  for (const Conv2DShape& s : Shapes()) {
    KernelContext ctx({1, Precision::kFloat32});
    auto kernel = Conv2DKernel::Create(ctx, s);
    REQUIRE(kernel.ok());
    const int64_t xs = s.batch * s.height * s.width * s.in_channels;
    const int64_t ws = s.kernel_h * s.kernel_w * s.in_channels * s.out_channels;
    const int64_t ys = s.batch * s.rows().out * s.cols().out * s.out_channels;
    auto x = RandomVector(xs, 21), w = RandomVector(ws, 22), b = RandomVector(s.out_channels, 23);
    std::vector<float> ry(ys), y(ys), relu(ys);
    reference::Conv2DForward(s, x.data(), w.data(), b.data(), ry.data());
    REQUIRE((*kernel)->ForwardInference(ctx, x.data(), w.data(), b.data(), y.data(), false).ok());
    REQUIRE((*kernel)->ForwardInference(ctx, x.data(), w.data(), b.data(), relu.data(), true).ok());
    CHECK(MaxRelativeError(y, ry) < 1e-5);
    for (float& v : ry) v = std::max(v, 0.0f);
    CHECK(MaxRelativeError(relu, ry) < 1e-5);
  }
}

TEST_CASE("windows that do not fit are refused with a clear message", "[conv2d]") {
  KernelContext ctx({1, Precision::kFloat32});
  auto k = Conv2DKernel::Create(ctx, {1, 2, 2, 1, 1, 3, 3, 1, 1, Padding::kValid});
  REQUIRE_FALSE(k.ok());
  CHECK(std::string(k.status().message()) ==
        "conv2d: a 3x3 kernel with stride 1x1, dilation 1x1 and valid padding does not fit a 2x2 "
        "input");
}

TEST_CASE("same padding follows TensorFlow", "[conv2d]") {
  Window1D w = ComputeWindow(7, 3, 2, Padding::kSame);
  CHECK(w.out == 4);
  CHECK(w.pad_before == 1);
  CHECK(w.pad_after == 1);
  w = ComputeWindow(6, 3, 2, Padding::kSame);
  CHECK(w.out == 3);
  CHECK(w.pad_before == 0);  // Total padding 1: the extra element goes after.
  CHECK(w.pad_after == 1);
  CHECK(ComputeWindow(5, 2, 2, Padding::kValid).out == 2);
}

}  // namespace
}  // namespace ringwork
