#include "kernels/losses.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/test_util.h"

namespace ringwork {
namespace {

TEST_CASE("softmax cross-entropy matches the double-precision formula", "[losses]") {
  const int64_t batch = 16, classes = 10;
  auto logits = RandomVector(batch * classes, 41, -5.f, 5.f);
  std::vector<int32_t> labels(batch);
  for (int64_t b = 0; b < batch; ++b) labels[b] = static_cast<int32_t>((b * 7) % classes);
  std::vector<float> probs(batch * classes), grad(batch * classes);
  auto loss =
      SoftmaxCrossEntropy(logits.data(), labels.data(), batch, classes, probs.data(), grad.data());
  REQUIRE(loss.ok());
  double want = 0;
  for (int64_t b = 0; b < batch; ++b) {
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c)
      sum += std::exp(static_cast<double>(logits[b * classes + c]));
    want += std::log(sum) - logits[b * classes + labels[b]];
    for (int64_t c = 0; c < classes; ++c) {
      const double p = std::exp(static_cast<double>(logits[b * classes + c])) / sum;
      CHECK(std::fabs(probs[b * classes + c] - p) < 1e-6);
      CHECK(std::fabs(grad[b * classes + c] - (p - (c == labels[b])) / batch) < 1e-7);
    }
  }
  CHECK(std::fabs(*loss - want / batch) < 1e-5);
}

TEST_CASE("softmax cross-entropy is stable for huge logits", "[losses]") {
  std::vector<float> logits = {1000.f, -1000.f, 0.f};
  std::vector<int32_t> labels = {1};
  auto loss = SoftmaxCrossEntropy(logits.data(), labels.data(), 1, 3, nullptr, nullptr);
  REQUIRE(loss.ok());
  CHECK(std::fabs(*loss - 2000.f) < 1e-2);
}

TEST_CASE("a label outside the classes is an error naming it", "[losses]") {
  std::vector<float> logits(6);
  std::vector<int32_t> labels = {1, 3};
  auto loss = SoftmaxCrossEntropy(logits.data(), labels.data(), 2, 3, nullptr, nullptr);
  REQUIRE_FALSE(loss.ok());
  CHECK(std::string(loss.status().message()) ==
        "label 3 of example 1 in the batch is outside 0..2 (the model has 3 classes)");
}

TEST_CASE("mean squared error and binary cross-entropy", "[losses]") {
  const int64_t n = 100;
  auto pred = RandomVector(n, 42, 0.01f, 0.99f);
  auto target = RandomVector(n, 43, 0.f, 1.f);
  std::vector<float> grad(n);
  double mse = 0, bce = 0;
  for (int64_t i = 0; i < n; ++i) {
    mse += std::pow(static_cast<double>(pred[i]) - target[i], 2);
    bce -= target[i] * std::log(static_cast<double>(pred[i])) +
           (1 - target[i]) * std::log(1 - static_cast<double>(pred[i]));
  }
  CHECK(std::fabs(MeanSquaredError(pred.data(), target.data(), n, grad.data()) - mse / n) < 1e-6);
  CHECK(std::fabs(grad[3] - 2 * (pred[3] - target[3]) / n) < 1e-7);
  CHECK(std::fabs(BinaryCrossEntropy(pred.data(), target.data(), n, false, grad.data()) - bce / n) <
        1e-5);
  // From logits equals from probabilities of the sigmoid.
  std::vector<float> logits(n), probs(n);
  for (int64_t i = 0; i < n; ++i) {
    logits[i] = std::log(pred[i] / (1 - pred[i]));
    probs[i] = pred[i];
  }
  CHECK(std::fabs(BinaryCrossEntropy(logits.data(), target.data(), n, true, nullptr) -
                  BinaryCrossEntropy(probs.data(), target.data(), n, false, nullptr)) < 1e-5);
}

}  // namespace
}  // namespace ringwork
