// Keras' initializers (their distributions, seeds that fix the values) and L1/L2
// regularizers (the penalty in the loss, its gradient by finite differences, read
// from and written to Keras configs).
#include "keras/initializers.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "keras/gradient_check_testing.h"
#include "keras/keras_import.h"
#include "keras/layers.h"
#include "keras/sequential.h"

namespace ringwork {
namespace {

struct Moments {
  double mean = 0, stddev = 0, largest = 0;
};

Moments Draw(const Initializer& init, int64_t fan_in, int64_t fan_out,
             const std::string& name = "dense/kernel") {
  Tensor t({fan_in, fan_out});
  Initialize(init, "glorot_uniform", t, fan_in, fan_out, 42, name);
  Moments m;
  for (int64_t i = 0; i < t.size(); ++i) m.mean += t[i];
  m.mean /= static_cast<double>(t.size());
  for (int64_t i = 0; i < t.size(); ++i) {
    m.stddev += (t[i] - m.mean) * (t[i] - m.mean);
    m.largest = std::max(m.largest, std::fabs(static_cast<double>(t[i])));
  }
  m.stddev = std::sqrt(m.stddev / static_cast<double>(t.size()));
  return m;
}

TEST_CASE("each initializer draws Keras' distribution", "[initializers]") {
  const int64_t in = 200, out = 300;
  // Variance scaling: uniform limits sqrt(3 s / n), normals truncated at 2 deviations
  // with Keras' correction, so their deviation is sqrt(s / n) again.
  const std::vector<std::tuple<std::string, double>> scaled = {
      {"glorot_uniform", 1.0 / ((in + out) / 2.0)},
      {"glorot_normal", 1.0 / ((in + out) / 2.0)},
      {"he_uniform", 2.0 / in},
      {"he_normal", 2.0 / in},
      {"lecun_uniform", 1.0 / in},
      {"lecun_normal", 1.0 / in}};
  for (const auto& [name, variance] : scaled) {
    INFO(name);
    const Moments m = Draw({.name = name}, in, out);
    CHECK(std::fabs(m.mean) < 0.01 * std::sqrt(variance) * 10);
    CHECK(m.stddev == Approx(std::sqrt(variance)).epsilon(0.02));
    const bool uniform = name.find("uniform") != std::string::npos;
    const double bound = uniform ? std::sqrt(3 * variance) : 2 * std::sqrt(variance) / 0.8796;
    CHECK(m.largest <= bound * (1 + 1e-6));
  }
  const Moments normal = Draw({.name = "random_normal", .mean = 1, .stddev = 0.5f}, in, out);
  CHECK(normal.mean == Approx(1).margin(0.01));
  CHECK(normal.stddev == Approx(0.5).epsilon(0.02));
  const Moments truncated = Draw({.name = "truncated_normal", .stddev = 0.5f}, in, out);
  CHECK(truncated.largest <= 1.0);
  CHECK(truncated.stddev == Approx(0.5 * 0.8796).epsilon(0.02));
  const Moments uniform = Draw({.name = "random_uniform", .minval = 0, .maxval = 2}, in, out);
  CHECK(uniform.mean == Approx(1).margin(0.01));
  const Moments constant = Draw({.name = "constant", .value = 0.25f}, in, out);
  CHECK(constant.mean == Approx(0.25));
  CHECK(constant.stddev == 0);
  CHECK(Draw({.name = "ones"}, 3, 4).mean == 1);
  CHECK(Draw({.name = "zeros"}, 3, 4).largest == 0);
  CHECK_FALSE(CheckInitializer({.name = "xavier"}, "dense").ok());
  CHECK_FALSE(CheckInitializer({.name = "random_normal", .stddev = 0}, "dense").ok());
}

TEST_CASE("a seeded initializer gives the same values for any variable; unseeded, by name",
          "[initializers]") {
  auto values = [](const Initializer& init, const std::string& name) {
    Tensor t({8, 8});
    Initialize(init, "glorot_uniform", t, 8, 8, 42, name);
    return std::vector<float>(t.data(), t.data() + t.size());
  };
  const Initializer seeded{.name = "he_normal", .seed = 7};
  CHECK(values(seeded, "a/kernel") == values(seeded, "b/kernel"));
  CHECK(values(seeded, "a/kernel") != values({.name = "he_normal", .seed = 8}, "a/kernel"));
  CHECK(values({.name = "he_normal"}, "a/kernel") != values({.name = "he_normal"}, "b/kernel"));
  // The default and glorot_uniform by name: Ringwork's draws of before, bit for bit.
  Tensor old({8, 8});
  GlorotUniform(old, 8, 8, 42, "a/kernel");
  CHECK(values({}, "a/kernel") == std::vector<float>(old.data(), old.data() + 64));
  CHECK(values({.name = "glorot_uniform"}, "a/kernel") == values({}, "a/kernel"));
}

TEST_CASE("L1 and L2 regularizers: the penalty in the loss, its gradient in the weights'",
          "[initializers][regularizers]") {
  Batch batch;
  batch.features = Tensor({4, 3});
  for (int64_t i = 0; i < 12; ++i) batch.features[i] = std::sin(0.7f * static_cast<float>(i));
  batch.labels = {0, 1, 1, 0};
  auto model_with = [](Regularizer kernel, Regularizer bias) {
    Sequential model;
    model.Add(Dense(2, {.bias_initializer = {.name = "constant", .value = 0.3f},
                        .kernel_regularizer = kernel,
                        .bias_regularizer = bias}));
    REQUIRE(model.Compile(FrozenSgd()).ok());
    REQUIRE(model.Build({3}).ok());
    return model;
  };
  Sequential regularized = model_with({.l1 = 0.01f, .l2 = 0.02f}, {.l2 = 0.5f});
  const float with = *regularized.TrainStep(batch);
  std::vector<std::pair<float, float>> factors;
  for (Variable* v : regularized.trainable_variables()) {
    factors.emplace_back(v->l1, v->l2);
    v->l1 = v->l2 = 0;
  }
  const float without = *regularized.TrainStep(batch);  // The rate leaves the weights.
  for (size_t i = 0; i < factors.size(); ++i) {
    std::tie(regularized.trainable_variables()[i]->l1, regularized.trainable_variables()[i]->l2) =
        factors[i];
  }
  double penalty = 0.5 * 2 * 0.3 * 0.3;  // The bias: l2 sum b^2.
  const Variable* kernel = regularized.trainable_variables()[0];
  for (int64_t i = 0; i < kernel->size(); ++i) {
    const double w = kernel->value[i];
    penalty += 0.01 * std::fabs(w) + 0.02 * w * w;
  }
  CHECK(with - without == Approx(penalty).epsilon(1e-4));
  CheckGradientsByFiniteDifferences(regularized, batch, /*stride=*/1);
  CHECK_FALSE(CheckRegularizer({.l1 = -1}, "dense").ok());
}

TEST_CASE("initializers and regularizers in Keras configs, both ways", "[initializers][keras]") {
  const std::string json = R"({"class_name": "Sequential", "config": {"layers": [
      {"class_name": "InputLayer", "config": {"batch_shape": [null, 3]}},
      {"class_name": "Dense", "config": {"units": 2, "name": "d",
        "kernel_initializer": {"class_name": "VarianceScaling",
          "config": {"scale": 2.0, "mode": "fan_in", "distribution": "truncated_normal",
                     "seed": 5}},
        "bias_initializer": {"class_name": "Constant", "config": {"value": 0.5}},
        "kernel_regularizer": "l2",
        "bias_regularizer": {"class_name": "L1L2", "config": {"l1": 0.25, "l2": 0.0}}}}]}})";
  absl::StatusOr<Model> model = ModelFromKerasJson(json);
  INFO(model.status().message());
  REQUIRE(model.ok());
  REQUIRE(model->Compile(FrozenSgd()).ok());
  REQUIRE(model->Build({3}).ok());
  const std::vector<Variable*> vars = model->trainable_variables();
  CHECK(vars[0]->l2 == 0.01f);  // Keras' default factor of "l2".
  CHECK(vars[1]->l1 == 0.25f);
  CHECK(vars[1]->value[0] == 0.5f);
  Tensor he({3, 2});
  Initialize({.name = "he_normal", .seed = 5}, "", he, 3, 2, 0, "");
  for (int64_t i = 0; i < 6; ++i) CHECK(vars[0]->value[i] == he[i]);
  // Written back as Keras 3's objects.
  const nlohmann::json written = Dense(2, {.kernel_initializer = {.name = "he_normal", .seed = 5},
                                           .kernel_regularizer = {.l2 = 0.01f}})
                                     ->keras_config();
  CHECK(written["kernel_initializer"]["class_name"] == "HeNormal");
  CHECK(written["kernel_initializer"]["config"]["seed"] == 5);
  CHECK(written["kernel_regularizer"]["class_name"] == "L1L2");
  CHECK(written["kernel_regularizer"]["config"]["l2"] == 0.01f);
  CHECK_FALSE(
      ModelFromKerasJson(std::string(json).replace(json.find("\"l2\","), 5, "\"l3\",")).ok());
  // An initializer Ringwork lacks only sets where training starts: a warning, not a refusal.
  std::string other = json;
  other.replace(other.find("\"scale\": 2.0"), 12, "\"scale\": 0.1");
  CHECK(ModelFromKerasJson(other).ok());
  // TF.js' spelling of LeCun's.
  CHECK(InitializerFromKeras({{"class_name", "LeCunNormal"}, {"config", {{"seed", nullptr}}}}, "$")
            ->name == "lecun_normal");
  CHECK(RegularizerFromKeras("l1l2", "$")->empty());
}

}  // namespace
}  // namespace ringwork
