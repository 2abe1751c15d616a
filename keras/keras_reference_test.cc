// A model of two outputs against the TensorFlow team's port of Keras' layers
// (@tensorflow/tfjs 4.22, run by the machine's node; scripts/setup.sh --suite
// installs it): the same weights and batch give the same loss of each output, the
// same total and the same weights after one SGD step.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "keras/model.h"
#include "keras/node_reference_testing.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

constexpr int64_t kFeatures = 4, kHidden = 6, kClasses = 3, kExamples = 8;

TEST_CASE("two outputs: each output's loss and one SGD step as Keras' (tfjs) gives them",
          "[multi_output][keras_reference]") {
  RequireNodePackage("@tensorflow/tfjs");

  SymbolicTensor x = Input({kFeatures}, "x");
  SymbolicTensor h = Apply(Dense(kHidden, {.activation = "tanh"}), x);
  SymbolicTensor price = Apply(Named(Dense(1), "price"), h);
  SymbolicTensor kind = Apply(Named(Dense(kClasses, {.activation = "softmax"}), "kind"),
                              Apply(Concatenate(), {h, price}));
  Model model({x}, {price, kind});
  CompileOptions compile;
  compile.losses = {{"price", {"mse"}}, {"kind", {"sparse_categorical_crossentropy"}}};
  compile.optimizer = {.name = "sgd", .learning_rate = 0.1f};
  compile.metrics = {};
  compile.intra_op_threads = 1;
  REQUIRE(model.Compile(compile).ok());
  REQUIRE(model.Build({kFeatures}).ok());

  nlohmann::json c;
  c["features"] = kFeatures;
  c["hidden"] = kHidden;
  c["classes"] = kClasses;
  c["learning_rate"] = 0.1;
  int j = 0;
  for (Variable* v : model.weights()) {
    for (int64_t i = 0; i < v->size(); ++i) {
      v->value[i] = 0.3f * std::sin(0.7f * static_cast<float>(i) + static_cast<float>(j));
    }
    c["weights"].push_back(std::vector<float>(v->value.data(), v->value.data() + v->size()));
    c["shapes"].push_back(v->value.shape());
    ++j;
  }
  TypedTensor xs(ValueType::kFloat32, {kExamples, kFeatures}),
      prices(ValueType::kFloat32, {kExamples, 1}), kinds(ValueType::kInt64, {kExamples});
  for (int64_t i = 0; i < xs.size(); ++i) xs.data<float>()[i] = std::sin(0.9f * i);
  for (int64_t i = 0; i < kExamples; ++i) {
    prices.data<float>()[i] = std::cos(static_cast<float>(i));
    kinds.data<int64_t>()[i] = i % kClasses;
  }
  c["x"] = std::vector<float>(xs.data<float>(), xs.data<float>() + xs.size());
  c["price"] = std::vector<float>(prices.data<float>(), prices.data<float>() + kExamples);
  c["kind"] = std::vector<int64_t>(kinds.data<int64_t>(), kinds.data<int64_t>() + kExamples);
  const std::string path = FreshTestDir("keras_reference") + "/case.json";
  std::ofstream(path) << c.dump();
  const Subprocess::Options options = NodeOptions();
  const SubprocessResult r =
      RunSubprocess({"/usr/bin/node", "keras/testdata/keras_reference.js", path}, options);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // The JSON is the last line (tfjs prints a banner about its native backend first).
  const nlohmann::json keras = nlohmann::json::parse(r.output.substr(r.output.find("{\"loss\"")));
  CHECK(keras["metrics_names"] == nlohmann::json({"loss", "price_loss", "kind_loss"}));

  const Pipeline data = *TensorSlicesPipeline({{"x", xs}, {"price", prices}, {"kind", kinds}});
  absl::StatusOr<EvaluateResult> ours = model.Evaluate(data, {}, kExamples);
  REQUIRE(ours.ok());
  CHECK(ours->loss == Approx(keras["loss"].get<double>()).epsilon(1e-5));
  CHECK(ours->metrics.at("price_loss") == Approx(keras["price_loss"].get<double>()).epsilon(1e-5));
  CHECK(ours->metrics.at("kind_loss") == Approx(keras["kind_loss"].get<double>()).epsilon(1e-5));

  Batch batch;
  REQUIRE(xs.ToFloat(&batch.features).ok());
  REQUIRE(prices.ToFloat(&batch.targets).ok());
  batch.more_targets.push_back({{0, 1, 2, 0, 1, 2, 0, 1}, Tensor()});
  REQUIRE(model.TrainStep(batch).ok());
  const std::vector<Variable*> weights = model.weights();
  REQUIRE(keras["weights_after"].size() == weights.size());
  for (size_t v = 0; v < weights.size(); ++v) {
    const std::vector<float> expected = keras["weights_after"][v].get<std::vector<float>>();
    REQUIRE(static_cast<int64_t>(expected.size()) == weights[v]->size());
    for (int64_t i = 0; i < weights[v]->size(); ++i) {
      INFO(weights[v]->name << "[" << i << "]");
      CHECK(weights[v]->value[i] == Approx(expected[i]).margin(1e-6));
    }
  }
}

}  // namespace
}  // namespace ringwork
