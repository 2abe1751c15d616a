// The optimizers' Keras defaults and Keras 3's weight decay, which every
// optimizer takes (kernels/optimizers_test.cc checks the update formulas).
#include "keras/optimizers.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "keras/keras_compile_config.h"

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

}  // namespace
}  // namespace ringwork
