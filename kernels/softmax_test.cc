#include "kernels/softmax.h"

#include <catch2/catch.hpp>

#include "kernels/reference/reference_ops.h"
#include "kernels/test_util.h"

namespace ringwork {
namespace {

TEST_CASE("softmax matches the reference, forward and backward", "[softmax]") {
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {7, 10}, {128, 10}, {3, 1000}}) {
    KernelContext ctx({1, Precision::kFloat32});
    auto k = SoftmaxKernel::Create(ctx, rows, cols);
    REQUIRE(k.ok());
    auto x = RandomVector(rows * cols, 31, -8.f, 8.f);
    auto dy = RandomVector(rows * cols, 32);
    std::vector<float> y(rows * cols), dx(rows * cols), ry(rows * cols), rdx(rows * cols);
    (*k)->Forward(ctx, x.data(), y.data());
    reference::SoftmaxForward(x.data(), ry.data(), rows, cols);
    (*k)->Backward(ctx, y.data(), dy.data(), dx.data());
    reference::SoftmaxBackward(ry.data(), dy.data(), rdx.data(), rows, cols);
    INFO(rows << "x" << cols);
    CHECK(MaxRelativeError(y, ry) < 1e-6);
    CHECK(MaxRelativeError(dx, rdx) < 1e-5);
  }
}

}  // namespace
}  // namespace ringwork
