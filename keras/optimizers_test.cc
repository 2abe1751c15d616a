// The optimizers' Keras defaults and Keras 3's weight decay, which every
// optimizer takes (kernels/optimizers_test.cc checks the update formulas).
#include "keras/optimizers.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "keras/keras_compile_config.h"
#include "keras/node_reference_testing.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

// One update of a variable holding 1 with a zero gradient: only weight decay
// moves it (Adam's step is 0 / (0 + epsilon) = 0).
float AfterOneStepWithoutGradient(const OptimizerSpec& spec) {
  auto optimizer = MakeOptimizer(spec);
  REQUIRE(optimizer.ok());
  Variable w{"w", Tensor(Shape{1})};
  w.value[0] = 1.f;
  float grad = 0.f;
  w.grad = &grad;
  (*optimizer)->Apply({&w});
  return w.value[0];
}

TEST_CASE("unset learning rates and weight decays take Keras' defaults", "[optimizers]") {
  CHECK((*MakeOptimizer({.name = "sgd"}))->learning_rate() == 0.01f);
  CHECK((*MakeOptimizer({.name = "adam"}))->learning_rate() == 0.001f);
  CHECK((*MakeOptimizer({.name = "adamw"}))->learning_rate() == 0.001f);
  CHECK(*(*MakeOptimizer({.name = "adamw"}))->spec().weight_decay == 0.004f);
  CHECK(*(*MakeOptimizer({.name = "adam"}))->spec().weight_decay == 0.f);
  CHECK(AfterOneStepWithoutGradient({.name = "sgd"}) == 1.f);
  CHECK(AfterOneStepWithoutGradient({.name = "adam"}) == 1.f);
  CHECK(AfterOneStepWithoutGradient({.name = "adamw"}) == 1.f - 0.001f * 0.004f);
}

TEST_CASE("weight_decay shrinks every variable by lr x weight_decay for sgd and adam too",
          "[optimizers]") {
  // Keras 3: variable - variable * weight_decay * learning_rate, before the update.
  for (const char* name : {"sgd", "adam", "adamw"}) {
    INFO(name);
    CHECK(
        AfterOneStepWithoutGradient({.name = name, .learning_rate = 0.5f, .weight_decay = 0.1f}) ==
        Approx(0.95f).epsilon(1e-7));
    CHECK(AfterOneStepWithoutGradient(
              {.name = name, .learning_rate = 0.5f, .momentum = 0.9f, .weight_decay = 0.1f}) ==
          Approx(0.95f).epsilon(1e-7));
  }
  CHECK_THAT(std::string(MakeOptimizer({.name = "sgd", .weight_decay = -1.f}).status().message()),
             Catch::Contains("weight_decay must be 0 or more"));
}

TEST_CASE("a Keras 3 compile config with weight decay for SGD or Adam is read", "[optimizers]") {
  for (const char* class_name : {"SGD", "Adam"}) {
    const nlohmann::json config = {
        {"optimizer",
         {{"module", "keras.optimizers"},
          {"class_name", class_name},
          {"config", {{"name", "x"}, {"learning_rate", 0.02}, {"weight_decay", 0.25}}}}},
        {"loss", "mse"}};
    absl::StatusOr<CompileOptions> read = CompileOptionsFromKeras(config, "compile_config");
    INFO(class_name << ": " << read.status());
    REQUIRE(read.ok());
    CHECK(*read->optimizer.weight_decay == 0.25f);
    CHECK(*read->optimizer.learning_rate == 0.02f);
    // Written back as Keras 3 writes it.
    CHECK(KerasCompileConfig(*read)["optimizer"]["config"]["weight_decay"] == 0.25f);
  }
  // A bare name takes the optimizer's defaults; Keras writes null for no decay.
  absl::StatusOr<CompileOptions> sgd =
      CompileOptionsFromKeras({{"optimizer", "sgd"}, {"loss", "mse"}}, "compile_config");
  REQUIRE(sgd.ok());
  CHECK(*sgd->optimizer.learning_rate == 0.01f);
  CHECK(KerasCompileConfig(*sgd)["optimizer"]["config"]["weight_decay"].is_null());
}

TEST_CASE("each optimizer's steps follow TF.js' (Keras' port) within 1e-6", "[optimizers][tfjs]") {
  RequireNodePackage("@tensorflow/tfjs");
  struct Case {
    const char* tfjs;
    OptimizerSpec spec;
  };
  const std::vector<Case> cases = {
      {"sgd", {.name = "sgd", .learning_rate = 0.1f}},
      {"momentum", {.name = "sgd", .learning_rate = 0.1f, .momentum = 0.9f}},
      {"adam", {.name = "adam", .learning_rate = 0.01f}},
      {"rmsprop", {.name = "rmsprop", .learning_rate = 0.01f, .rho = 0.8f}},
      {"rmsprop", {.name = "rmsprop", .learning_rate = 0.01f, .momentum = 0.5f, .rho = 0.9f}},
      {"adagrad", {.name = "adagrad", .learning_rate = 0.1f}},
  };
  const int64_t n = 7, steps = 6;
  for (const Case& c : cases) {
    INFO(c.spec.name << " (TF.js " << c.tfjs << "), momentum " << c.spec.momentum);
    auto optimizer = MakeOptimizer(c.spec);
    REQUIRE(optimizer.ok());
    Variable w{"w", Tensor(Shape{n})};
    std::vector<float> grad(static_cast<size_t>(n));
    w.grad = grad.data();
    nlohmann::json j = {{"optimizer", c.tfjs},
                        {"learning_rate", *c.spec.learning_rate},
                        {"momentum", c.spec.momentum},
                        {"rho", c.spec.rho}};
    for (int64_t i = 0; i < n; ++i) w.value[i] = 0.5f * std::sin(1.3f * static_cast<float>(i));
    j["param"] = std::vector<float>(w.value.data(), w.value.data() + n);
    std::vector<std::vector<float>> ours;
    for (int64_t s = 0; s < steps; ++s) {
      for (int64_t i = 0; i < n; ++i) grad[i] = std::cos(0.7f * static_cast<float>(i * steps + s));
      j["grads"].push_back(grad);
      (*optimizer)->Apply({&w});
      ours.emplace_back(w.value.data(), w.value.data() + n);
    }
    const std::string path = FreshTestDir("tfjs_optimizer") + "/case.json";
    std::ofstream(path) << j.dump();
    const SubprocessResult r = RunSubprocess(
        {"/usr/bin/node", "keras/testdata/tfjs_optimizer_steps.js", path}, NodeOptions());
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const nlohmann::json tfjs = nlohmann::json::parse(r.output.substr(r.output.find("{\"after\"")));
    for (int64_t s = 0; s < steps; ++s) {
      for (int64_t i = 0; i < n; ++i) {
        INFO("step " << s + 1 << ", element " << i);
        CHECK(ours[s][i] == Approx(tfjs["after"][s][i].get<double>()).margin(1e-6));
      }
    }
  }
}

TEST_CASE("Keras 3 RMSprop and Adagrad configs are read and written", "[optimizers]") {
  const nlohmann::json config = {
      {"optimizer",
       {{"class_name", "RMSprop"},
        {"config",
         {{"learning_rate", 0.002}, {"rho", 0.8}, {"momentum", 0.1}, {"centered", false}}}}},
      {"loss", "mse"}};
  absl::StatusOr<CompileOptions> read = CompileOptionsFromKeras(config, "compile_config");
  REQUIRE(read.ok());
  CHECK(read->optimizer.name == "rmsprop");
  CHECK(read->optimizer.rho == 0.8f);
  CHECK(read->optimizer.momentum == 0.1f);
  CHECK(KerasCompileConfig(*read)["optimizer"]["class_name"] == "RMSprop");
  nlohmann::json centered = config;
  centered["optimizer"]["config"]["centered"] = true;
  CHECK_THAT(std::string(CompileOptionsFromKeras(centered, "c").status().message()),
             Catch::Contains("c.optimizer.config.centered: true is not supported"));
  absl::StatusOr<CompileOptions> adagrad =
      CompileOptionsFromKeras({{"optimizer", "adagrad"}, {"loss", "mse"}}, "compile_config");
  REQUIRE(adagrad.ok());
  CHECK(KerasCompileConfig(*adagrad)["optimizer"]["config"]["initial_accumulator_value"] ==
        Approx(0.1));
  CHECK_THAT(std::string(MakeOptimizer({.name = "rmsprop", .rho = 1.5f}).status().message()),
             Catch::Contains("rho must be in [0, 1)"));
}

}  // namespace
}  // namespace ringwork
