#include "kernels/dropout.h"

#include <catch2/catch.hpp>
#include <vector>

namespace ringwork {
namespace {

TEST_CASE("dropout keeps about 1 - rate of the elements, scaled", "[dropout]") {
  const int64_t n = 200000;
  std::vector<float> x(n, 2.f), y(n), mask(n);
  DropoutForward(x.data(), y.data(), mask.data(), n, 0.25f, 7, 3);
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (mask[i] != 0) {
      ++kept;
      CHECK(mask[i] == Approx(1 / 0.75f));
      CHECK(y[i] == Approx(2 / 0.75f));
    } else {
      CHECK(y[i] == 0);
    }
  }
  CHECK(std::abs(static_cast<double>(kept) / n - 0.75) < 0.01);
}

TEST_CASE("dropout masks are reproducible and change with the step", "[dropout]") {
  const int64_t n = 1000;
  std::vector<float> x(n, 1.f), y(n), a(n), b(n), c(n);
  DropoutForward(x.data(), y.data(), a.data(), n, 0.5f, 42, 1);
  DropoutForward(x.data(), y.data(), b.data(), n, 0.5f, 42, 1);
  DropoutForward(x.data(), y.data(), c.data(), n, 0.5f, 42, 2);
  CHECK(a == b);
  CHECK(a != c);
  std::vector<float> dy(n, 3.f), dx(n);
  DropoutBackward(dy.data(), a.data(), dx.data(), n);
  for (int64_t i = 0; i < n; ++i) CHECK(dx[i] == 3.f * a[i]);
}

}  // namespace
}  // namespace ringwork
