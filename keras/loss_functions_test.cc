// mean_absolute_error, huber and categorical_crossentropy (label smoothing, logits
// or probabilities, weights) against TF.js (Keras' port, @tensorflow/tfjs 4.22):
// the same batch gives the same mean loss and the same gradient of the output.
#include "keras/loss_functions.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "keras/keras_compile_config.h"
#include "keras/losses.h"
#include "keras/node_reference_testing.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

constexpr int64_t kN = 4, kWidth = 3;

struct Case {
  LossSpec spec;
  std::vector<float> y_true, y_pred;
};

void CheckAgainstTfjs(const Case& c) {
  INFO(c.spec.name << ", from_logits " << c.spec.from_logits << ", label_smoothing "
                   << c.spec.label_smoothing << ", delta " << c.spec.delta);
  absl::StatusOr<Loss> loss = Loss::Create(c.spec);
  REQUIRE(loss.ok());
  Batch batch;
  batch.targets = Tensor({kN, kWidth}, c.y_true);
  Tensor output({kN, kWidth}, c.y_pred), grad;
  absl::StatusOr<float> ours = loss->Compute(output, batch, &grad);
  REQUIRE(ours.ok());
  const nlohmann::json j = {{"loss", c.spec.name == "mean_absolute_error" ? "mae" : c.spec.name},
                            {"n", kN},
                            {"width", kWidth},
                            {"y_true", c.y_true},
                            {"y_pred", c.y_pred},
                            {"from_logits", c.spec.from_logits},
                            {"label_smoothing", c.spec.label_smoothing},
                            {"delta", c.spec.delta}};
  const std::string path = FreshTestDir("tfjs_losses") + "/case.json";
  std::ofstream(path) << j.dump();
  const SubprocessResult r =
      RunSubprocess({"/usr/bin/node", "keras/testdata/tfjs_losses.js", path}, NodeOptions());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json tfjs = nlohmann::json::parse(r.output.substr(r.output.find("{\"value\"")));
  CHECK(*ours == Approx(tfjs["value"].get<double>()).epsilon(1e-5));
  for (int64_t i = 0; i < kN * kWidth; ++i) {
    INFO("gradient " << i);
    CHECK(grad[i] == Approx(tfjs["grad"][i].get<double>()).margin(1e-6));
  }
}

TEST_CASE("mean_absolute_error, huber and categorical_crossentropy as TF.js computes them",
          "[losses][tfjs]") {
  RequireNodePackage("@tensorflow/tfjs");
  const std::vector<float> numbers = {0.5f, -1.f, 2.f,  0.f,   3.f, -2.5f,
                                      1.f,  1.f,  0.2f, -0.7f, 4.f, 0.1f};
  const std::vector<float> guesses = {0.1f, -0.2f, 0.4f,  1.5f, 0.9f, -0.5f,
                                      1.1f, 3.5f,  -0.1f, 0.3f, 0.f,  0.05f};
  // No output equals its target: at a tie TF.js' |x| gradient is -1, TensorFlow's
  // (and Ringwork's) 0.
  CheckAgainstTfjs({{"mean_absolute_error"}, numbers, guesses});
  CheckAgainstTfjs({{.name = "huber", .delta = 1.f}, numbers, guesses});
  CheckAgainstTfjs({{.name = "huber", .delta = 0.5f}, numbers, guesses});
  const std::vector<float> one_hot = {0, 1, 0, 1, 0, 0, 0, 0, 1, 0.2f, 0.7f, 0.1f};
  const std::vector<float> logits = {2.f, -1.f, 0.5f, 0.f,   3.f,  -2.f,
                                     1.f, 1.f,  4.f,  -0.5f, 0.2f, 0.1f};
  // Rows that do not sum to 1, one share below 1e-7 after the division.
  const std::vector<float> probabilities = {0.2f, 0.3f, 0.1f, 0.5f,  1.2f, 0.3f,
                                            0.1f, 0.1f, 0.8f, 1e-9f, 0.5f, 0.9f};
  for (float smoothing : {0.f, 0.1f}) {
    CheckAgainstTfjs({{"categorical_crossentropy", true, smoothing}, one_hot, logits});
    CheckAgainstTfjs({{"categorical_crossentropy", false, smoothing}, one_hot, probabilities});
  }
}

TEST_CASE("Keras 3 loss objects with label_smoothing and delta are read and written", "[losses]") {
  const nlohmann::json config = {
      {"optimizer", "adam"},
      {"loss",
       {{"class_name", "CategoricalCrossentropy"},
        {"config", {{"from_logits", true}, {"label_smoothing", 0.1}, {"axis", -1}}}}}};
  absl::StatusOr<CompileOptions> read = CompileOptionsFromKeras(config, "compile_config");
  INFO(read.status());
  REQUIRE(read.ok());
  CHECK(read->loss.name == "categorical_crossentropy");
  CHECK(read->loss.from_logits);
  CHECK(read->loss.label_smoothing == 0.1f);
  const nlohmann::json written = KerasCompileConfig(*read)["loss"];
  CHECK(written["class_name"] == "CategoricalCrossentropy");
  CHECK(written["config"]["label_smoothing"] == Approx(0.1));
  absl::StatusOr<CompileOptions> huber = CompileOptionsFromKeras(
      {{"loss", {{"class_name", "Huber"}, {"config", {{"delta", 2.0}}}}}}, "c");
  REQUIRE(huber.ok());
  CHECK(huber->loss.delta == 2.f);
  CHECK(KerasCompileConfig(*huber)["loss"]["config"]["delta"] == 2.0);
  absl::StatusOr<CompileOptions> mae = CompileOptionsFromKeras({{"loss", "mae"}}, "c");
  REQUIRE(mae.ok());
  CHECK(mae->loss.name == "mean_absolute_error");
  // Label smoothing is categorical_crossentropy's alone here.
  CHECK_THAT(std::string(CompileOptionsFromKeras({{"loss",
                                                   {{"class_name", "BinaryCrossentropy"},
                                                    {"config", {{"label_smoothing", 0.2}}}}}},
                                                 "c")
                             .status()
                             .message()),
             Catch::Contains("c.loss.config.label_smoothing: 0.2 is not supported"));
}

TEST_CASE("the new losses weight each example and refuse what does not fit", "[losses]") {
  const std::vector<float> y = {0, 1, 0, 1, 0, 0}, p = {0.1f, 0.7f, 0.2f, 0.3f, 0.3f, 0.4f};
  const float weights[2] = {2.f, 0.f};
  std::vector<float> grad(6);
  // Example 1 weighs 0: half of example 0's loss, twice.
  const float both =
      CategoricalCrossentropy(p.data(), y.data(), 2, 3, false, 0, grad.data(), weights);
  CHECK(both == Approx(-std::log(0.7)).epsilon(1e-6));
  CHECK(grad[3] == 0.f);
  CHECK(std::isnan(ElementwiseLoss(ElementwiseKind::kHuber, std::vector<float>{NAN}.data(),
                                   std::vector<float>{1.f}.data(), 1, 1, nullptr, nullptr)));
  absl::StatusOr<Loss> cce = Loss::Create({"categorical_crossentropy"});
  REQUIRE(cce.ok());
  CHECK_THAT(std::string(cce->Compute(Tensor({2, 3}, p), {0, 1}, nullptr).status().message()),
             Catch::Contains("takes one-hot (or soft) float targets"));
  CHECK_THAT(std::string(Loss::Create({.name = "huber", .delta = 0.f}).status().message()),
             Catch::Contains("delta positive"));
  CHECK_THAT(std::string(Loss::Create({"hinge"}).status().message()),
             Catch::Contains("expected sparse_categorical_crossentropy, categorical_crossentropy"));
}

}  // namespace
}  // namespace ringwork
