// Metrics: AUC against hand-computed areas, from probabilities and from logits;
// its state adds up across batches (and workers) to the AUC of all of them; on 2
// workers Evaluate reports the AUC of the whole evaluation set.
#include "keras/metrics.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "base/status_macros.h"
#include "data/synthetic_clicks.h"
#include "keras/sequential.h"
#include "testing/local_cluster.h"

namespace ringwork {
namespace {

double Auc(const std::vector<float>& predictions, const std::vector<int32_t>& labels,
           bool logits = false, int64_t width = 1) {
  Metric auc = *Metric::Create("auc");
  std::vector<double> state(auc.state_size(), 0.0);
  Tensor outputs({static_cast<int64_t>(labels.size()), width}, predictions);
  auc.Accumulate(outputs, labels, 0, logits, state.data());
  return auc.Result(state.data());
}

TEST_CASE("AUC of predictions in distinct thresholds is the exact area under the ROC curve",
          "[metrics]") {
  CHECK(Auc({0.1f, 0.4f, 0.35f, 0.8f}, {0, 1, 0, 1}) == Approx(1.0));
  CHECK(Auc({0.1f, 0.4f, 0.5f, 0.8f}, {0, 1, 0, 1}) == Approx(0.75));  // One pair of four inverted.
  CHECK(Auc({0.9f, 0.2f, 0.7f, 0.1f}, {0, 1, 0, 1}) == Approx(0.0).margin(1e-12));
  CHECK(Auc({0.5f, 0.5f, 0.5f, 0.5f}, {0, 1, 0, 1}) == Approx(0.5));  // No ranking at all.
  CHECK(Auc({0.3f, 0.6f}, {1, 1}) == 0.0);                            // No negatives: Keras' 0.
  // Logits: sigmoid first; two classes: the second's probability.
  CHECK(Auc({-2.2f, -0.4f, 0.0f, 1.4f}, {0, 1, 0, 1}, /*logits=*/true) == Approx(0.75));
  CHECK(Auc({0.9f, 0.1f, 0.6f, 0.4f, 0.5f, 0.5f, 0.2f, 0.8f}, {0, 1, 0, 1}, false, 2) ==
        Approx(0.75));
}

TEST_CASE("Keras' thresholded AUC is close to the exact AUC of the synthetic click log",
          "[metrics]") {
  // Scores from the numeric features alone (the part of the true logit they
  // carry): their exact AUC (Mann-Whitney) and Keras' over 200 thresholds agree
  // up to the thresholds' resolution, and both stay below the log's best.
  ClickLog log = SyntheticClicks({.train = 0, .test = 20000});
  std::vector<double> scores;
  Metric auc = *Metric::Create("auc");
  std::vector<double> state(auc.state_size(), 0.0);
  Tensor probabilities({20000, 1});
  for (int64_t i = 0; i < 20000; ++i) {
    const float* row = log.data.test.features.data() + i * 5;
    const double score = 1.0 / (1.0 + std::exp(-(0.8 * row[2] - 0.5 * row[3] + 0.3 * row[4])));
    scores.push_back(score);
    probabilities[i] = static_cast<float>(score);
  }
  auc.Accumulate(probabilities, log.data.test.labels, 0, false, state.data());
  const double exact = ExactAuc(scores, log.data.test.labels);
  INFO("exact " << exact << ", thresholded " << auc.Result(state.data()) << ", best "
                << log.bayes_auc);
  CHECK(exact > 0.6);
  CHECK(auc.Result(state.data()) == Approx(exact).margin(2e-3));
  CHECK(log.bayes_auc > exact);  // The numbers alone rank worse than the truth.
  CHECK(ExactAuc({0.1, 0.4, 0.4, 0.8}, {0, 1, 0, 1}) == Approx(0.875));  // A tie counts half.
}

TEST_CASE("AUC states of two halves add up to the AUC of the whole", "[metrics]") {
  std::vector<float> p;
  std::vector<int32_t> y;
  for (int i = 0; i < 400; ++i) {
    p.push_back(static_cast<float>((i * 37) % 101) / 100.f);
    y.push_back(p.back() + 0.1f * static_cast<float>(i % 5 - 2) > 0.5f ? 1
                                                                       : 0);  // Noisy, but ranked.
  }
  Metric auc = *Metric::Create("auc");
  std::vector<double> whole(auc.state_size(), 0.0), halves(auc.state_size(), 0.0);
  auc.Accumulate(Tensor({400, 1}, p), y, 0, false, whole.data());
  for (int half = 0; half < 2; ++half) {
    std::vector<float> hp(p.begin() + half * 200, p.begin() + half * 200 + 200);
    std::vector<int32_t> hy(y.begin() + half * 200, y.begin() + half * 200 + 200);
    auc.Accumulate(Tensor({200, 1}, hp), hy, 0, false, halves.data());
  }
  CHECK(auc.Result(halves.data()) == auc.Result(whole.data()));
  CHECK(auc.Result(whole.data()) > 0.5);
  CHECK_THAT(std::string(auc.CheckOutputWidth(10).message()),
             Catch::Contains("this model has 10 outputs"));
}

TEST_CASE("Evaluate on 2 workers reports the AUC of the whole evaluation set",
          "[metrics][distributed]") {
  Examples examples;
  examples.features = Tensor({301, 2});
  for (int64_t i = 0; i < 301; ++i) {
    const float a = static_cast<float>((i * 13) % 29) / 29.f,
                b = static_cast<float>((i * 7) % 17) / 17.f;
    examples.features[2 * i] = a;
    examples.features[2 * i + 1] = b;
    examples.labels.push_back(a + 0.3f * b + 0.2f * static_cast<float>(i % 3) > 0.8f ? 1 : 0);
  }
  const Dataset data = Dataset::FromExamples(examples);
  std::vector<std::pair<double, double>> precision_recall(2);
  auto evaluate = [&](int workers) {
    std::vector<double> aucs(workers);
    LocalCluster::Options options;
    options.num_workers = workers;
    auto results = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
      auto scope = w.strategy->scope();
      Sequential model;
      model.Add(Dense(1, {.activation = "sigmoid"}));
      CompileOptions compile;
      compile.loss = {"binary_crossentropy"};
      compile.metrics = {"auc", "accuracy", "precision", "recall"};
      compile.intra_op_threads = 1;
      RW_RETURN_IF_ERROR(model.Compile(compile));
      FitOptions fit;
      fit.epochs = 3;
      fit.batch_size = 32;
      fit.verbose = 0;
      RW_RETURN_IF_ERROR(model.Fit(data, fit).status());
      RW_ASSIGN_OR_RETURN(EvaluateResult result, model.Evaluate(data, 64));
      aucs[w.rank] = result.metrics["auc"];
      // Precision and recall from the summed counts: every worker the same.
      precision_recall[w.rank] = {result.metrics["precision"], result.metrics["recall"]};
      return absl::OkStatus();
    });
    for (const absl::Status& s : results) REQUIRE(s.ok());
    return aucs;
  };
  const std::vector<double> one = evaluate(1);
  const std::pair<double, double> one_pr = precision_recall[0];
  const std::vector<double> two = evaluate(2);
  CHECK(precision_recall[1] == precision_recall[0]);
  CHECK(precision_recall[0].first == Approx(one_pr.first).margin(1e-2));
  CHECK(precision_recall[0].second == Approx(one_pr.second).margin(1e-2));
  CHECK(one_pr.first > 0.5);
  INFO("AUC on 1 worker " << one[0] << ", on 2 " << two[0]);
  CHECK(two[0] == two[1]);
  CHECK(one[0] > 0.6);
  // Weights agree to float rounding; predictions fall in the same thresholds.
  CHECK(two[0] == Approx(one[0]).margin(1e-3));
}

double MetricOf(const std::string& name, const Tensor& outputs, const Batch& batch,
                bool logits = false) {
  Metric m = *Metric::Create(name);
  std::vector<double> state(m.state_size(), 0.0);
  m.Accumulate(outputs, batch, 0, logits, state.data());
  return m.Result(state.data());
}

Batch Labels(std::vector<int32_t> labels, std::vector<float> weights = {}) {
  Batch b;
  b.labels = std::move(labels);
  b.weights = std::move(weights);
  return b;
}

TEST_CASE("precision and recall as Keras' at 0.5: weighted, from logits, class ids one-hot",
          "[metrics]") {
  const Tensor p({5, 1}, {0.9f, 0.6f, 0.4f, 0.2f, 0.7f});
  // Predicted positive: 0.9 (right), 0.6 (wrong), 0.7 (right); 0.4 missed.
  CHECK(MetricOf("precision", p, Labels({1, 0, 1, 0, 1})) == Approx(2.0 / 3));
  CHECK(MetricOf("recall", p, Labels({1, 0, 1, 0, 1})) == Approx(2.0 / 3));
  const Batch weighted = Labels({1, 0, 1, 0, 1}, {1.f, 2.f, 1.f, 1.f, 0.5f});
  CHECK(MetricOf("precision", p, weighted) == Approx(1.5 / 3.5));
  CHECK(MetricOf("recall", p, weighted) == Approx(1.5 / 2.5));
  // 0.5 itself is not above the threshold; nothing predicted positive gives 0.
  CHECK(MetricOf("precision", Tensor({2, 1}, {0.5f, 0.1f}), Labels({1, 1})) == 0);
  CHECK(MetricOf("recall", Tensor({2, 1}, {0.5f, 0.1f}), Labels({1, 1})) == 0);
  const Tensor logits({5, 1}, {2.2f, 0.4f, -0.4f, -1.4f, 0.85f});
  CHECK(MetricOf("precision", logits, weighted, /*logits=*/true) == Approx(1.5 / 3.5));
  // Three classes: each class of each example one decision against the one-hot row.
  // Row 0 [.6 .3 .1], label 0: a true positive. Row 1 [.2 .7 .1], label 2: class 1
  // a false positive, class 2 a false negative. Row 2 [.4 .4 .2], label 1: missed.
  const Tensor three({3, 3}, {0.6f, 0.3f, 0.1f, 0.2f, 0.7f, 0.1f, 0.4f, 0.4f, 0.2f});
  CHECK(MetricOf("precision", three, Labels({0, 2, 1})) == Approx(0.5));
  CHECK(MetricOf("recall", three, Labels({0, 2, 1})) == Approx(1.0 / 3));
  // The same rows as logits: the softmax decides.
  Tensor z({3, 3});
  for (int64_t i = 0; i < 9; ++i) z[i] = std::log(three[i]);
  CHECK(MetricOf("precision", z, Labels({0, 2, 1}), true) == Approx(0.5));
  // Float targets: every output a decision of its own (multi-label).
  Batch multi;
  multi.targets = Tensor({2, 2}, {1.f, 0.f, 1.f, 1.f});
  CHECK(MetricOf("recall", Tensor({2, 2}, {0.8f, 0.9f, 0.3f, 0.6f}), multi) == Approx(2.0 / 3));
  CHECK(MetricOf("precision", Tensor({2, 2}, {0.8f, 0.9f, 0.3f, 0.6f}), multi) == Approx(2.0 / 3));
}

TEST_CASE("top-5 accuracy counts ties at the boundary in, as tf.math.in_top_k", "[metrics]") {
  const Tensor scores({5, 7}, {7, 6, 5, 4, 3, 2, 1,    // label 4: 4 higher, in
                               7, 6, 5, 4, 3, 2, 1,    // label 5: 5 higher, out
                               1, 1, 1, 1, 1, 1, 1,    // label 6: none higher, in
                               3, 3, 3, 3, 2, 2, 2,    // label 6: 4 higher, in
                               5, 5, 5, 5, 5, 1, 1});  // label 5: 5 higher, out
  CHECK(MetricOf("top_k_categorical_accuracy", scores, Labels({4, 5, 6, 6, 5})) == Approx(3.0 / 5));
  CHECK(MetricOf("sparse_top_k_categorical_accuracy", scores,
                 Labels({4, 5, 6, 6, 5}, {1, 3, 1, 1, 1})) == Approx(3.0 / 7));
  // One-hot targets: the class is the target row's argmax.
  Batch one_hot;
  one_hot.targets = Tensor({2, 7});
  one_hot.targets[4] = 1;      // Row 0: class 4, in.
  one_hot.targets[7 + 5] = 1;  // Row 1: class 5, out.
  CHECK(MetricOf("top_k_categorical_accuracy",
                 Tensor({2, 7}, std::vector<float>(scores.data(), scores.data() + 14)),
                 one_hot) == Approx(0.5));
}

TEST_CASE("root mean squared error: the root of the weighted mean, not a mean of roots",
          "[metrics]") {
  Batch batch;
  batch.targets = Tensor({2, 2}, {0.f, 2.f, 3.f, 3.f});
  const Tensor outputs({2, 2}, {1.f, 2.f, 3.f, 5.f});  // Squared errors 1, 0 and 0, 4.
  CHECK(MetricOf("rmse", outputs, batch) == Approx(std::sqrt(1.25)));
  batch.weights = {3.f, 1.f};  // (3 * 0.5 + 1 * 2) / 4.
  CHECK(MetricOf("root_mean_squared_error", outputs, batch) == Approx(std::sqrt(3.5 / 4)));
}

}  // namespace
}  // namespace ringwork
