#include "kernels/pooling.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>
#include <random>

#include "kernels/reference/reference_ops.h"
#include "kernels/test_util.h"

namespace ringwork {
namespace {

// Distinct values, so that every window has a single maximum.
std::vector<float> Distinct(int64_t n, uint64_t seed) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.f);
  std::shuffle(v.begin(), v.end(), std::mt19937_64(seed));
  for (float& x : v) x = x / static_cast<float>(n) - 0.5f;
  return v;
}

TEST_CASE("pooling matches the reference", "[pooling]") {
  for (PoolKind kind : {PoolKind::kMax, PoolKind::kAverage}) {
    for (Pool2DShape s : {Pool2DShape{kind, 2, 8, 8, 3, 2, 2, 2, 2, Padding::kValid},
                          Pool2DShape{kind, 2, 7, 7, 3, 2, 2, 2, 2, Padding::kSame},
                          Pool2DShape{kind, 1, 9, 6, 2, 3, 3, 2, 1, Padding::kSame},
                          Pool2DShape{kind, 3, 28, 28, 16, 2, 2, 2, 2, Padding::kValid}}) {
      KernelContext ctx({1, Precision::kFloat32});
      auto k = Pool2DKernel::Create(ctx, s);
      REQUIRE(k.ok());
      const int64_t xs = s.batch * s.height * s.width * s.channels;
      const int64_t ys = s.batch * s.rows().out * s.cols().out * s.channels;
      auto x = Distinct(xs, 5);
      auto dy = RandomVector(ys, 6);
      std::vector<float> y(ys), dx(xs), ry(ys), rdx(xs), inference(ys);
      (*k)->ForwardInference(ctx, x.data(), inference.data());
      (*k)->Forward(ctx, x.data(), y.data());
      CHECK(inference == y);  // The same values, without a workspace.
      (*k)->Backward(ctx, dy.data(), dx.data());
      reference::Pool2DForward(s, x.data(), ry.data());
      reference::Pool2DBackward(s, x.data(), dy.data(), rdx.data());
      INFO((kind == PoolKind::kMax ? "max " : "avg ")
           << s.height << "x" << s.width << " " << PaddingName(s.padding));
      CHECK(MaxRelativeError(y, ry) < 1e-6);
      CHECK(MaxRelativeError(dx, rdx) < 1e-6);
    }
  }
}

}  // namespace
}  // namespace ringwork
