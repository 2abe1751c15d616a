#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "keras/layers.h"
#include "tensor/tensor.h"

namespace ringwork {
namespace {

constexpr int64_t kBatch = 64, kHeight = 3, kWidth = 4, kChannels = 2;

// Distinct values everywhere, so any move of an element shows.
Tensor Images() {
  Tensor x({kBatch, kHeight, kWidth, kChannels});
  for (int64_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  return x;
}

float At(const Tensor& t, int64_t b, int64_t i, int64_t j, int64_t c) {
  return t[((b * kHeight + i) * kWidth + j) * kChannels + c];
}

// Per example: 0 unchanged, 1 left-right, 2 upside down, 3 both; -1 anything else.
std::vector<int> HowFlipped(const Tensor& x, const Tensor& y) {
  std::vector<int> how;
  for (int64_t b = 0; b < kBatch; ++b) {
    int found = -1;
    for (int flip = 0; flip < 4 && found < 0; ++flip) {
      bool same = true;
      for (int64_t i = 0; i < kHeight; ++i) {
        for (int64_t j = 0; j < kWidth; ++j) {
          for (int64_t c = 0; c < kChannels; ++c) {
            const int64_t si = flip & 2 ? kHeight - 1 - i : i, sj = flip & 1 ? kWidth - 1 - j : j;
            same = same && At(y, b, i, j, c) == At(x, b, si, sj, c);
          }
        }
      }
      if (same) found = flip;
    }
    how.push_back(found);
  }
  return how;
}

std::unique_ptr<Layer> Built(const std::string& mode) {
  std::unique_ptr<Layer> layer = RandomFlip(mode);
  layer->set_name("random_flip");
  REQUIRE(layer->Build({kHeight, kWidth, kChannels}, BuildContext{42}).ok());
  return layer;
}

std::vector<int> FlipsAtStep(Layer& layer, int64_t step, const Tensor& x) {
  KernelContext kernels({1, Precision::kFloat32});
  layer.set_training_step(step);
  Tensor y;
  REQUIRE(layer.Forward(kernels, x, &y, /*training=*/true).ok());
  return HowFlipped(x, y);
}

TEST_CASE("RandomFlip flips whole examples at random in training, none in inference",
          "[augmentation]") {
  const Tensor x = Images();
  for (const std::string mode : {"horizontal", "vertical", "horizontal_and_vertical"}) {
    INFO(mode);
    std::unique_ptr<Layer> layer = Built(mode);
    const std::vector<int> flips = FlipsAtStep(*layer, 5, x);
    std::vector<int> counts(4, 0);
    for (int f : flips) {
      REQUIRE(f >= 0);  // Every example is one of the flips of its input.
      ++counts[f];
    }
    const std::vector<int> allowed = mode == "horizontal" ? std::vector<int>{0, 1}
                                     : mode == "vertical" ? std::vector<int>{0, 2}
                                                          : std::vector<int>{0, 1, 2, 3};
    for (int f = 0; f < 4; ++f) {
      const bool can = std::find(allowed.begin(), allowed.end(), f) != allowed.end();
      CHECK((counts[f] > 0) == can);  // 64 fair draws: every allowed flip occurs.
    }
    CHECK(FlipsAtStep(*layer, 5, x) == flips);  // A function of the step: repeatable...
    CHECK(FlipsAtStep(*layer, 6, x) != flips);  // ...and new at the next one.
    layer->set_replica(1);
    CHECK(FlipsAtStep(*layer, 5, x) != flips);  // Each worker draws its own.

    KernelContext kernels({1, Precision::kFloat32});
    Tensor y;
    REQUIRE(layer->Forward(kernels, x, &y, /*training=*/false).ok());
    CHECK(HowFlipped(x, y) == std::vector<int>(kBatch, 0));
  }
}

TEST_CASE("RandomFlip's gradient is the same flip: <flip(x), dy> = <x, backward(dy)>",
          "[augmentation]") {
  std::unique_ptr<Layer> layer = Built("horizontal_and_vertical");
  KernelContext kernels({1, Precision::kFloat32});
  Tensor x = Images(), dy({kBatch, kHeight, kWidth, kChannels}), y, dx;
  for (int64_t i = 0; i < dy.size(); ++i) dy[i] = std::sin(0.37f * static_cast<float>(i));
  layer->set_training_step(3);
  REQUIRE(layer->Forward(kernels, x, &y, true).ok());
  REQUIRE(layer->Backward(kernels, x, y, dy, &dx).ok());
  // A permutation: the products pair up exactly, element for element.
  std::vector<double> forward_pairs, backward_pairs;
  for (int64_t i = 0; i < x.size(); ++i) {
    forward_pairs.push_back(static_cast<double>(y[i]) * dy[i]);
    backward_pairs.push_back(static_cast<double>(x[i]) * dx[i]);
  }
  std::sort(forward_pairs.begin(), forward_pairs.end());
  std::sort(backward_pairs.begin(), backward_pairs.end());
  CHECK(forward_pairs == backward_pairs);
}

TEST_CASE("RandomFlip refuses a mode it does not know and inputs that are not images",
          "[augmentation]") {
  std::unique_ptr<Layer> layer = RandomFlip("sideways");
  layer->set_name("random_flip");
  absl::StatusOr<Shape> built = layer->Build({3, 4, 2}, BuildContext{1});
  REQUIRE(!built.ok());
  CHECK(std::string(built.status().message()) ==
        "random_flip: mode \"sideways\" must be \"horizontal\", \"vertical\" or "
        "\"horizontal_and_vertical\"");
  layer = RandomFlip();
  layer->set_name("random_flip");
  built = layer->Build({12}, BuildContext{1});
  REQUIRE(!built.ok());
  CHECK(std::string(built.status().message()) ==
        "random_flip needs [height, width, channels] inputs, got [12]");
}

}  // namespace
}  // namespace ringwork
