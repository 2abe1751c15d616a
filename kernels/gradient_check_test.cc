// Every backward kernel against central finite differences of its forward kernel,
// on small shapes: for L(x) = sum_i y_i(x) r_i with random r, the backward pass fed
// dy = r must return dL/dx.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>

#include "kernels/activation.h"
#include "kernels/conv2d.h"
#include "kernels/dense.h"
#include "kernels/losses.h"
#include "kernels/pooling.h"
#include "kernels/softmax.h"
#include "kernels/test_util.h"

namespace ringwork {
namespace {

using Forward = std::function<void(const std::vector<float>& input, std::vector<float>& out)>;

// Checks analytic[i] against (L(x + eps e_i) - L(x - eps e_i)) / 2 eps.
void CheckGradient(const char* what, std::vector<float> x, const std::vector<float>& r,
                   const std::vector<float>& analytic, const Forward& forward, float eps = 1e-2f) {
  std::vector<float> out(r.size());
  auto loss = [&](const std::vector<float>& input) {
    forward(input, out);
    double l = 0;
    for (size_t i = 0; i < r.size(); ++i) l += static_cast<double>(out[i]) * r[i];
    return l;
  };
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float saved = x[i];
    x[i] = saved + eps;
    const double up = loss(x);
    x[i] = saved - eps;
    const double down = loss(x);
    x[i] = saved;
    const double numeric = (up - down) / (2 * eps);
    worst = std::max(worst, std::fabs(numeric - analytic[i]) / std::max(1.0, std::fabs(numeric)));
  }
  INFO(what << ": worst relative error " << worst);
  CHECK(worst < 5e-3);
}

TEST_CASE("dense gradients match finite differences", "[gradients]") {
  KernelContext ctx({1, Precision::kFloat32});
  const DenseShape s{3, 5, 4};
  auto k = DenseKernel::Create(ctx, s);
  REQUIRE(k.ok());
  auto x = RandomVector(15, 1), w = RandomVector(20, 2), b = RandomVector(4, 3),
       r = RandomVector(12, 4);
  std::vector<float> dx(15), dw(20), db(4);
  (*k)->BackwardData(ctx, r.data(), w.data(), dx.data());
  (*k)->BackwardWeights(ctx, x.data(), r.data(), dw.data(), db.data());
  CheckGradient("dense dx", x, r, dx, [&](const std::vector<float>& in, std::vector<float>& y) {
    (*k)->Forward(ctx, in.data(), w.data(), b.data(), y.data());
  });
  CheckGradient("dense dw", w, r, dw, [&](const std::vector<float>& in, std::vector<float>& y) {
    (*k)->Forward(ctx, x.data(), in.data(), b.data(), y.data());
  });
  CheckGradient("dense db", b, r, db, [&](const std::vector<float>& in, std::vector<float>& y) {
    (*k)->Forward(ctx, x.data(), w.data(), in.data(), y.data());
  });
}

TEST_CASE("conv2d gradients match finite differences", "[gradients]") {
  for (Conv2DShape s : {Conv2DShape{2, 5, 4, 2, 3, 3, 3, 1, 1, Padding::kValid},
                        Conv2DShape{1, 5, 5, 2, 2, 3, 3, 2, 2, Padding::kSame}}) {
    KernelContext ctx({1, Precision::kFloat32});
    auto k = Conv2DKernel::Create(ctx, s);
    REQUIRE(k.ok());
    const int64_t xs = s.batch * s.height * s.width * s.in_channels;
    const int64_t ws = s.kernel_h * s.kernel_w * s.in_channels * s.out_channels;
    const int64_t ys = s.batch * s.rows().out * s.cols().out * s.out_channels;
    auto x = RandomVector(xs, 5), w = RandomVector(ws, 6), b = RandomVector(s.out_channels, 7);
    auto r = RandomVector(ys, 8);
    std::vector<float> dx(xs), dw(ws), db(s.out_channels);
    (*k)->BackwardData(ctx, r.data(), w.data(), dx.data());
    (*k)->BackwardWeights(ctx, x.data(), r.data(), dw.data(), db.data());
    CheckGradient("conv dx", x, r, dx, [&](const std::vector<float>& in, std::vector<float>& y) {
      (*k)->Forward(ctx, in.data(), w.data(), b.data(), y.data());
    });
    CheckGradient("conv dw", w, r, dw, [&](const std::vector<float>& in, std::vector<float>& y) {
      (*k)->Forward(ctx, x.data(), in.data(), b.data(), y.data());
    });
    CheckGradient("conv db", b, r, db, [&](const std::vector<float>& in, std::vector<float>& y) {
      (*k)->Forward(ctx, x.data(), w.data(), in.data(), y.data());
    });
  }
}

TEST_CASE("pooling gradients match finite differences", "[gradients]") {
  for (PoolKind kind : {PoolKind::kAverage, PoolKind::kMax}) {
    Pool2DShape s{kind, 1, 5, 5, 2, 2, 2, 2, 2, Padding::kSame};
    KernelContext ctx({1, Precision::kFloat32});
    auto k = Pool2DKernel::Create(ctx, s);
    REQUIRE(k.ok());
    // Well-separated values: a small step never changes which element is the max.
    std::vector<float> x(50);
    std::iota(x.begin(), x.end(), 0.f);
    std::shuffle(x.begin(), x.end(), std::mt19937(9));
    const int64_t ys = s.rows().out * s.cols().out * s.channels;
    auto r = RandomVector(ys, 10);
    std::vector<float> y(ys), dx(50);
    (*k)->Forward(ctx, x.data(), y.data());
    (*k)->Backward(ctx, r.data(), dx.data());
    CheckGradient(kind == PoolKind::kMax ? "max pool" : "avg pool", x, r, dx,
                  [&](const std::vector<float>& in, std::vector<float>& out) {
                    (*k)->Forward(ctx, in.data(), out.data());
                  });
  }
}

TEST_CASE("activation and softmax gradients match finite differences", "[gradients]") {
  const int64_t n = 24;
  // Away from relu's kink at 0.
  auto x = RandomVector(n, 11, 0.1f, 2.f);
  for (int i = 0; i < n; i += 2) x[i] = -x[i];
  auto r = RandomVector(n, 12);
  for (Activation a :
       {Activation::kRelu, Activation::kTanh, Activation::kSigmoid, Activation::kGelu}) {
    KernelContext ctx({1, Precision::kFloat32});
    auto k = ActivationKernel::Create(ctx, a, n);
    REQUIRE(k.ok());
    std::vector<float> dx(n);
    (*k)->Backward(ctx, x.data(), r.data(), dx.data());
    CheckGradient(
        std::string(ActivationName(a)).c_str(), x, r, dx,
        [&](const std::vector<float>& in, std::vector<float>& y) {
          (*k)->Forward(ctx, in.data(), y.data());
        },
        1e-3f);
  }
  KernelContext ctx({1, Precision::kFloat32});
  auto softmax = SoftmaxKernel::Create(ctx, 4, 6);
  REQUIRE(softmax.ok());
  std::vector<float> y(n), dx(n);
  (*softmax)->Forward(ctx, x.data(), y.data());
  (*softmax)->Backward(ctx, y.data(), r.data(), dx.data());
  CheckGradient(
      "softmax", x, r, dx,
      [&](const std::vector<float>& in, std::vector<float>& out) {
        (*softmax)->Forward(ctx, in.data(), out.data());
      },
      1e-3f);
}

TEST_CASE("loss gradients match finite differences", "[gradients]") {
  const int64_t batch = 3, classes = 4;
  auto logits = RandomVector(batch * classes, 13, -2.f, 2.f);
  std::vector<int32_t> labels = {0, 3, 1};
  std::vector<float> grad(batch * classes);
  REQUIRE(
      SoftmaxCrossEntropy(logits.data(), labels.data(), batch, classes, nullptr, grad.data()).ok());
  const std::vector<float> one = {1.f};
  CheckGradient(
      "softmax cross-entropy", logits, one, grad,
      [&](const std::vector<float>& in, std::vector<float>& out) {
        out[0] = *SoftmaxCrossEntropy(in.data(), labels.data(), batch, classes, nullptr, nullptr);
      },
      1e-3f);
  auto pred = RandomVector(8, 14, 0.2f, 0.8f), target = RandomVector(8, 15, 0.f, 1.f);
  std::vector<float> g(8);
  MeanSquaredError(pred.data(), target.data(), 8, g.data());
  CheckGradient(
      "mse", pred, one, g,
      [&](const std::vector<float>& in, std::vector<float>& out) {
        out[0] = MeanSquaredError(in.data(), target.data(), 8, nullptr);
      },
      1e-3f);
  for (bool from_logits : {false, true}) {
    BinaryCrossEntropy(pred.data(), target.data(), 8, from_logits, g.data());
    CheckGradient(
        from_logits ? "bce from logits" : "bce", pred, one, g,
        [&](const std::vector<float>& in, std::vector<float>& out) {
          out[0] = BinaryCrossEntropy(in.data(), target.data(), 8, from_logits, nullptr);
        },
        1e-3f);
  }
}

}  // namespace
}  // namespace ringwork
