// oneDNN dense kernels against their reference twins, float32 and bfloat16.
#include "kernels/dense.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/reference/reference_ops.h"
#include "kernels/test_util.h"

namespace ringwork {
namespace {

void Compare(Precision precision, DenseShape s, double tolerance) {
  KernelContext ctx({1, precision});
  auto kernel = DenseKernel::Create(ctx, s);
  INFO(kernel.status().message());
  REQUIRE(kernel.ok());
  const int64_t m = s.batch, k = s.in, n = s.out;
  auto x = RandomVector(m * k, 1), w = RandomVector(k * n, 2), b = RandomVector(n, 3);
  auto dy = RandomVector(m * n, 4);
  std::vector<float> y(m * n), dx(m * k), dw(k * n), db(n);
  std::vector<float> ry(m * n), rdx(m * k), rdw(k * n), rdb(n);
  (*kernel)->Forward(ctx, x.data(), w.data(), b.data(), y.data());
  (*kernel)->BackwardData(ctx, dy.data(), w.data(), dx.data());
  (*kernel)->BackwardWeights(ctx, x.data(), dy.data(), dw.data(), db.data());
  reference::DenseForward(x.data(), w.data(), b.data(), ry.data(), m, k, n);
  reference::DenseBackwardData(dy.data(), w.data(), rdx.data(), m, k, n);
  reference::DenseBackwardWeights(x.data(), dy.data(), rdw.data(), rdb.data(), m, k, n);
  // Errors of a dot product grow like the square root of its length.
  INFO(PrecisionName(precision) << " " << m << "x" << k << "x" << n);
  CHECK(MaxRelativeError(y, ry, std::sqrt(k)) < tolerance);
  CHECK(MaxRelativeError(dx, rdx, std::sqrt(n)) < tolerance);
  CHECK(MaxRelativeError(dw, rdw, std::sqrt(m)) < tolerance);
  CHECK(MaxRelativeError(db, rdb, std::sqrt(m)) < 1e-5);  // The bias gradient is float32.
}

TEST_CASE("dense kernels match the reference in float32", "[dense]") {
  for (DenseShape s : {DenseShape{1, 1, 1}, DenseShape{7, 13, 5}, DenseShape{32, 784, 256},
                       DenseShape{128, 256, 128}, DenseShape{128, 128, 10}}) {
    Compare(Precision::kFloat32, s, 1e-5);
  }
}

TEST_CASE("dense kernels match the reference in bfloat16 within its precision", "[dense]") {
  for (DenseShape s : {DenseShape{7, 13, 5}, DenseShape{32, 784, 256}, DenseShape{128, 128, 10}}) {
    Compare(Precision::kBFloat16, s, 2e-2);
  }
}

TEST_CASE("bad dense shapes are refused", "[dense]") {
  KernelContext ctx({1, Precision::kFloat32});
  CHECK_FALSE(DenseKernel::Create(ctx, {0, 3, 3}).ok());
}

}  // namespace
}  // namespace ringwork
