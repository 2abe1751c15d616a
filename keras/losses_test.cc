// Losses and metrics on number targets and per-example weights, as Keras defines
// them (the weighted sum over the batch's examples, divided by their count), with
// their gradients checked by finite differences.
#include "keras/losses.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "data/dataset.h"
#include "keras/layers.h"
#include "keras/metrics.h"
#include "keras/sequential.h"

namespace ringwork {
namespace {

Batch NumberBatch(std::vector<float> targets, Shape shape, std::vector<float> weights = {}) {
  Batch b;
  b.features = Tensor({shape[0], 1});
  b.targets = Tensor(shape, targets);
  b.weights = std::move(weights);
  return b;
}

// d(loss)/d(output) by central differences, against the loss's own gradient.
void CheckGradient(const Loss& loss, const Tensor& output, const Batch& batch) {
  Tensor grad;
  REQUIRE(loss.Compute(output, batch, &grad).ok());
  for (int64_t i = 0; i < output.size(); ++i) {
    Tensor up = output, down = output;
    const float h = 1e-3f;
    up[i] += h;
    down[i] -= h;
    const double numeric =
        (*loss.Compute(up, batch, nullptr) - *loss.Compute(down, batch, nullptr)) / (2.0 * h);
    CHECK(grad[i] == Approx(numeric).margin(2e-3));
  }
}

TEST_CASE("mean squared error on number targets of any shape, weighted per example", "[losses]") {
  Loss mse = *Loss::Create({"mean_squared_error"});
  const Tensor output({2, 3}, {1, 2, 3, 0, 0, 1});
  const Batch plain = NumberBatch({1, 1, 1, 0, 1, 0}, {2, 3});
  // Row 0: (0 + 1 + 4) / 3; row 1: (0 + 1 + 1) / 3; the mean over both rows.
  CHECK(*mse.Compute(output, plain, nullptr) == Approx((5.0 / 3 + 2.0 / 3) / 2));
  const Batch weighted = NumberBatch({1, 1, 1, 0, 1, 0}, {2, 3}, {1, 3});
  CHECK(*mse.Compute(output, weighted, nullptr) == Approx((5.0 / 3 + 3 * 2.0 / 3) / 2));
  CheckGradient(mse, output, weighted);
  // Targets of another size than the outputs are refused.
  const Batch wrong = NumberBatch({1, 2}, {2, 1});
  CHECK(mse.Compute(output, wrong, nullptr).status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("binary cross-entropy on multi-label targets, and class ids refused by numbers",
          "[losses]") {
  Loss bce = *Loss::Create({"binary_crossentropy", /*from_logits=*/true});
  const Tensor logits({2, 2}, {2, -1, 0.5f, 3});
  const Batch labels = NumberBatch({1, 0, 0, 1}, {2, 2}, {0.5f, 2});
  double want = 0;
  const float z[4] = {2, -1, 0.5f, 3}, t[4] = {1, 0, 0, 1}, w[4] = {0.5f, 0.5f, 2, 2};
  for (int i = 0; i < 4; ++i) {
    const double p = 1 / (1 + std::exp(-z[i]));
    want += w[i] * -(t[i] * std::log(p) + (1 - t[i]) * std::log(1 - p));
  }
  CHECK(*bce.Compute(logits, labels, nullptr) == Approx(want / 4));
  CheckGradient(bce, logits, labels);
  Loss sparse = *Loss::Create({"sparse_categorical_crossentropy", true});
  CHECK(std::string(sparse.Compute(logits, labels, nullptr).status().message())
            .find("takes integer class ids") != std::string::npos);
}

TEST_CASE("sparse categorical cross-entropy weights each example", "[losses]") {
  Loss sparse = *Loss::Create({"sparse_categorical_crossentropy", true});
  const Tensor logits({2, 3}, {1, 2, 3, 3, 1, 0});
  Batch batch;
  batch.features = Tensor({2, 1});
  batch.labels = {2, 1};
  const float unweighted_0 =
      *sparse.Compute(Tensor({1, 3}, {1, 2, 3}), std::vector<int32_t>{2}, nullptr);
  const float unweighted_1 =
      *sparse.Compute(Tensor({1, 3}, {3, 1, 0}), std::vector<int32_t>{1}, nullptr);
  batch.weights = {2, 0.5f};
  CHECK(*sparse.Compute(logits, batch, nullptr) ==
        Approx((2 * unweighted_0 + 0.5 * unweighted_1) / 2));
  CheckGradient(sparse, logits, batch);
}

TEST_CASE("metrics count each example with its weight", "[metrics]") {
  Metric accuracy = *Metric::Create("accuracy");
  Batch batch;
  batch.features = Tensor({3, 1});
  batch.labels = {0, 1, 1};
  batch.weights = {1, 2, 3};
  const Tensor outputs({3, 2}, {0.9f, 0.1f, 0.2f, 0.8f, 0.7f, 0.3f});  // Right, right, wrong.
  std::vector<double> state(2, 0.0);
  accuracy.Accumulate(outputs, batch, 0, false, state.data());
  CHECK(accuracy.Result(state.data()) == Approx(3.0 / 6));
  Metric mae = *Metric::Create("mae");
  const Batch numbers = NumberBatch({1, 2, 3, 4}, {2, 2}, {1, 3});
  std::vector<double> s2(2, 0.0);
  mae.Accumulate(Tensor({2, 2}, {1, 1, 3, 2}), numbers, 0, false, s2.data());
  // Row 0: (0 + 1) / 2, weight 1; row 1: (0 + 2) / 2, weight 3.
  CHECK(mae.Result(s2.data()) == Approx((0.5 + 3 * 1.0) / 4));
}

TEST_CASE("sparse categorical cross-entropy on probabilities divides each row by its sum",
          "[losses]") {
  // TF.js (Keras' semantics) on [0.2, 0.3, 0.1], label 1: loss log(0.6 / 0.3) =
  // 0.6931, gradient [1/0.6, 1/0.6 - 1/0.3, 1/0.6].
  Loss loss = *Loss::Create({"sparse_categorical_crossentropy"});
  Batch batch;
  batch.features = Tensor({2, 1});
  batch.labels = {1, 0};
  const Tensor output({2, 3}, {0.2f, 0.3f, 0.1f, 0.7f, 0.2f, 0.1f});
  Tensor grad;
  absl::StatusOr<float> value = loss.Compute(output, batch, &grad);
  REQUIRE(value.ok());
  CHECK(*value == Approx((std::log(2.0) - std::log(0.7)) / 2).epsilon(1e-5));
  CHECK(grad[0] == Approx(1.0 / 0.6 / 2).epsilon(1e-5));
  CHECK(grad[1] == Approx((1.0 / 0.6 - 1.0 / 0.3) / 2).epsilon(1e-5));
  CHECK(grad[2] == Approx(1.0 / 0.6 / 2).epsilon(1e-5));
  CHECK(grad[4] == Approx(0.5).epsilon(1e-5));  // A row that sums to 1: 1/sum.
  CheckGradient(loss, output, batch);
  // Entries outside [1e-7, 1 - 1e-7] are clipped first (TF.js: 0.5596 on
  // [-0.5, 0.3, 0.4], label 2), and get no gradient.
  Batch one;
  one.features = Tensor({1, 1});
  one.labels = {2};
  value = loss.Compute(Tensor({1, 3}, {-0.5f, 0.3f, 0.4f}), one, &grad);
  REQUIRE(value.ok());
  CHECK(*value == Approx(-std::log(0.4 / 0.7000001)).epsilon(1e-5));
  CHECK(*value == Approx(0.5596).epsilon(1e-4));
  CHECK(grad[0] == 0.f);
  CHECK(grad[1] == Approx(1 / 0.7000001).epsilon(1e-5));
  CHECK(grad[2] == Approx(1 / 0.7000001 - 1 / 0.4).epsilon(1e-5));
  // A diverged model's NaN is not hidden (TerminateOnNaN sees it).
  value = loss.Compute(Tensor({1, 3}, {std::nanf(""), 0.3f, 0.4f}), one, nullptr);
  REQUIRE(value.ok());
  CHECK(std::isnan(*value));
}

TEST_CASE("sparse categorical cross-entropy refuses outputs that are not one vector per example",
          "[losses]") {
  // A Dense on [4, 4, 8] gives [4, 4, 10] per example now, as Keras': one class id
  // per example cannot be scored against it.
  Loss loss = *Loss::Create({"sparse_categorical_crossentropy", true});
  Batch batch;
  batch.features = Tensor({2, 1});
  batch.labels = {1, 3};
  absl::StatusOr<float> value = loss.Compute(Tensor({2, 4, 4, 10}), batch, nullptr);
  CHECK(value.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(value.status().message().find("this output has shape [4, 4, 10]") != std::string::npos);
}

// Dense(1, sigmoid) with kernel 1 and bias 0: its logit is the input.
Sequential SigmoidIdentity(CompileOptions compile) {
  Sequential model;
  model.Add(Dense(1, {.activation = "sigmoid"}));
  compile.intra_op_threads = 1;
  REQUIRE(model.Compile(compile).ok());
  REQUIRE(model.Build({1}).ok());
  model.weights()[0]->value[0] = 1.f;
  model.weights()[1]->value[0] = 0.f;
  return model;
}

TEST_CASE("sigmoid + binary_crossentropy: from the logits, as Keras (loss 30 at logit 30)",
          "[losses]") {
  CompileOptions compile;
  compile.loss = {"binary_crossentropy"};
  compile.optimizer = {.name = "sgd", .learning_rate = 1.f};
  Sequential model = SigmoidIdentity(compile);
  // Two confidently wrong examples: logit 30, label 0. Keras: loss 30, and each
  // logit's gradient sigmoid(30) / batch = 1/2 (clipped probabilities gave 15.94
  // and no gradient at all).
  Batch batch;
  batch.features = Tensor({2, 1}, {30.f, 30.f});
  batch.labels = {0, 0};
  absl::StatusOr<float> loss = model.TrainStep(batch);
  REQUIRE(loss.ok());
  CHECK(*loss == Approx(30.f).epsilon(1e-4));
  // SGD at rate 1: bias -= sum of the logits' gradients (1/2 + 1/2).
  CHECK(model.weights()[1]->value[0] == Approx(-1.f).epsilon(1e-4));
  CHECK(model.weights()[0]->value[0] == Approx(1.f - 30.f).epsilon(1e-4));
}

TEST_CASE("a sigmoid fused into its loss: metrics and predictions still see probabilities",
          "[losses]") {
  CompileOptions compile;
  compile.loss = {"binary_crossentropy"};
  compile.metrics = {"accuracy"};
  Sequential model = SigmoidIdentity(compile);
  Examples examples;
  examples.features = Tensor({2, 1}, {0.3f, 30.f});
  examples.labels = {1, 0};
  absl::StatusOr<EvaluateResult> result = model.Evaluate(Dataset::FromExamples(examples));
  REQUIRE(result.ok());
  // -log(sigmoid(0.3)) and -log(1 - sigmoid(30)) = 30.
  CHECK(result->loss == Approx((std::log1p(std::exp(-0.3)) + 30.0) / 2).epsilon(1e-5));
  // Probability 0.574 is class 1 (right), 1.0 is class 1 (wrong); read as logits,
  // 0.3 would fall below 0.5.
  CHECK(result->metrics["accuracy"] == Approx(0.5));
  absl::StatusOr<Tensor> predicted = model.Predict(examples.features);
  REQUIRE(predicted.ok());
  CHECK((*predicted)[0] == Approx(1.0 / (1.0 + std::exp(-0.3))).epsilon(1e-6));
  CHECK((*predicted)[1] == Approx(1.0));
  // from_logits=true on a sigmoid output is the user's choice: not fused.
  compile.loss = {"binary_crossentropy", /*from_logits=*/true};
  compile.intra_op_threads = 1;
  absl::Status recompiled = model.Compile(compile);
  INFO(recompiled.message());
  REQUIRE(recompiled.ok());
  predicted = model.Predict(examples.features);
  REQUIRE(predicted.ok());
  CHECK((*predicted)[0] == Approx(1.0 / (1.0 + std::exp(-0.3))).epsilon(1e-6));
}

}  // namespace
}  // namespace ringwork
