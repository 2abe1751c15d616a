#include "kernels/activation.h"

#include <catch2/catch.hpp>

#include "kernels/reference/reference_ops.h"
#include "kernels/test_util.h"

namespace ringwork {
namespace {

TEST_CASE("activations match the reference, forward and backward", "[activation]") {
  const int64_t n = 10007;
  auto x = RandomVector(n, 21, -4.f, 4.f);
  auto dy = RandomVector(n, 22);
  for (Activation a : {Activation::kLinear, Activation::kRelu, Activation::kTanh,
                       Activation::kSigmoid, Activation::kGelu}) {
    KernelContext ctx({1, Precision::kFloat32});
    auto k = ActivationKernel::Create(ctx, a, n);
    REQUIRE(k.ok());
    std::vector<float> y(n), dx(n), ry(n), rdx(n);
    (*k)->Forward(ctx, x.data(), y.data());
    (*k)->Backward(ctx, x.data(), dy.data(), dx.data());
    reference::ActivationForward(a, x.data(), ry.data(), n);
    reference::ActivationBackward(a, x.data(), dy.data(), rdx.data(), n);
    INFO(ActivationName(a));
    CHECK(MaxRelativeError(y, ry) < 1e-5);
    CHECK(MaxRelativeError(dx, rdx) < 1e-5);
  }
}

TEST_CASE("activation names parse", "[activation]") {
  Activation a;
  CHECK(ParseActivation("gelu", &a));
  CHECK(a == Activation::kGelu);
  CHECK(ParseActivation("", &a));
  CHECK(a == Activation::kLinear);
  CHECK_FALSE(ParseActivation("swish", &a));
}

}  // namespace
}  // namespace ringwork
