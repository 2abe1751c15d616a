// Learning-rate schedules against Keras' formulas, gradient clipping against
// hand-computed norms, and the optimizer taking its rate from a schedule.
#include "keras/learning_rate_schedule.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "keras/gradient_clipping.h"
#include "keras/optimizers.h"

namespace ringwork {
namespace {

using Catch::Matchers::Contains;

TEST_CASE("ExponentialDecay follows Keras' formula, with and without a staircase", "[schedule]") {
  auto smooth =
      ExponentialDecay({.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5});
  REQUIRE(smooth.ok());
  CHECK((*smooth)->Rate(0) == 0.1f);
  CHECK((*smooth)->Rate(10) == 0.05f);
  CHECK((*smooth)->Rate(5) == static_cast<float>(0.1 * std::sqrt(0.5)));
  CHECK((*smooth)->Rate(25) == static_cast<float>(0.1 * std::pow(0.5, 2.5)));
  auto stairs = ExponentialDecay(
      {.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5, .staircase = true});
  REQUIRE(stairs.ok());
  CHECK((*stairs)->Rate(9) == 0.1f);
  CHECK((*stairs)->Rate(15) == 0.05f);
  CHECK((*stairs)->Rate(20) == 0.025f);
  CHECK((*stairs)->Describe() ==
        "ExponentialDecay(initial_learning_rate=0.1, decay_steps=10, decay_rate=0.5, "
        "staircase=true)");
}

TEST_CASE("PiecewiseConstantDecay switches after each boundary", "[schedule]") {
  auto pieces = PiecewiseConstantDecay({10, 20}, {1.0, 0.5, 0.1});
  REQUIRE(pieces.ok());
  CHECK((*pieces)->Rate(0) == 1.0f);
  CHECK((*pieces)->Rate(10) == 1.0f);  // Keras: values[0] while step <= boundaries[0].
  CHECK((*pieces)->Rate(11) == 0.5f);
  CHECK((*pieces)->Rate(20) == 0.5f);
  CHECK((*pieces)->Rate(21) == 0.1f);
  CHECK((*pieces)->Rate(1000000) == 0.1f);
}

TEST_CASE("CosineDecay warms up linearly, then decays to alpha of the target", "[schedule]") {
  auto warm = CosineDecay({.initial_learning_rate = 0,
                           .decay_steps = 100,
                           .alpha = 0.1,
                           .warmup_target = 1.0,
                           .warmup_steps = 10});
  REQUIRE(warm.ok());
  CHECK((*warm)->Rate(0) == 0.0f);
  CHECK((*warm)->Rate(5) == 0.5f);
  CHECK((*warm)->Rate(10) == 1.0f);
  CHECK((*warm)->Rate(60) == static_cast<float>(0.9 * 0.5 * (1 + std::cos(M_PI / 2)) + 0.1));
  CHECK((*warm)->Rate(110) == Approx(0.1f));
  CHECK((*warm)->Rate(5000) == (*warm)->Rate(110));
  auto plain = CosineDecay({.initial_learning_rate = 2.0, .decay_steps = 100});
  REQUIRE(plain.ok());
  CHECK((*plain)->Rate(0) == 2.0f);
  CHECK((*plain)->Rate(50) == Approx(1.0f));
  CHECK((*plain)->Rate(100) == Approx(0.0f).margin(1e-7));
}

TEST_CASE("schedules with impossible arguments are refused, naming the argument", "[schedule]") {
  CHECK_THAT(std::string(ExponentialDecay({.decay_steps = 0}).status().message()),
             Contains("decay_steps must be positive"));
  CHECK_THAT(std::string(ExponentialDecay({.decay_rate = -1}).status().message()),
             Contains("decay_rate"));
  CHECK_THAT(std::string(PiecewiseConstantDecay({10}, {1.0}).status().message()),
             Contains("1 boundaries need 2 values, got 1"));
  CHECK_THAT(std::string(PiecewiseConstantDecay({10, 10}, {1, 2, 3}).status().message()),
             Contains("must increase"));
  CHECK_THAT(std::string(PiecewiseConstantDecay({10}, {1, NAN}).status().message()),
             Contains("finite rate"));
  CHECK_THAT(std::string(CosineDecay({.warmup_steps = 5}).status().message()),
             Contains("needs a warmup_target"));
  CHECK_THAT(std::string(CosineDecay({.alpha = 2}).status().message()),
             Contains("alpha must be in [0, 1]"));
}

// Two variables with gradients (3) and (4, 0): a global norm of 5.
struct TwoVariables {
  std::vector<float> grads = {3, 4, 0};
  Variable a{"a", Tensor(Shape{1})}, b{"b", Tensor(Shape{2})};
  TwoVariables() {
    a.grad = grads.data();
    b.grad = grads.data() + 1;
  }
  std::vector<Variable*> all() { return {&a, &b}; }
};

TEST_CASE("gradient clipping by norm, global norm and value, as Keras", "[clipping]") {
  {
    TwoVariables v;
    CHECK(GlobalGradientNorm(v.all()) == 5.0);
    ClipGradients(v.all(), {.global_clipnorm = 1});
    CHECK(v.grads[0] == static_cast<float>(3 * (1.0 / 5.0)));
    CHECK(v.grads[1] == static_cast<float>(4 * (1.0 / 5.0)));
    CHECK(GlobalGradientNorm(v.all()) == Approx(1.0));
  }
  {
    TwoVariables v;  // Each on its own: (3) -> (1); (4, 0) -> (1, 0).
    ClipGradients(v.all(), {.clipnorm = 1});
    CHECK(v.grads == std::vector<float>{1, 1, 0});
  }
  {
    TwoVariables v;  // Under the bound: untouched.
    ClipGradients(v.all(), {.global_clipnorm = 6});
    CHECK(v.grads == std::vector<float>{3, 4, 0});
  }
  {
    TwoVariables v;
    v.grads = {3, -4, 0.25f};
    ClipGradients(v.all(), {.clipvalue = 0.5f});
    CHECK(v.grads == std::vector<float>{0.5f, -0.5f, 0.25f});
  }
  CHECK_THAT(
      std::string(GradientClipping{.clipnorm = 1, .global_clipnorm = 1}.Validate().message()),
      Contains("cannot be combined"));
  CHECK_THAT(std::string(GradientClipping{.clipvalue = -1}.Validate().message()),
             Contains("clipvalue must be >= 0"));
  OptimizerSpec spec;
  spec.clipping.clipnorm = NAN;
  CHECK_THAT(std::string(MakeOptimizer(spec).status().message()),
             Contains("clipnorm must be >= 0"));
}

TEST_CASE("an optimizer takes each update's rate from its schedule and refuses a set rate",
          "[schedule]") {
  OptimizerSpec spec{.name = "sgd"};
  spec.learning_rate_schedule = *PiecewiseConstantDecay({1}, {1.0, 0.25});
  auto sgd = MakeOptimizer(spec);
  REQUIRE(sgd.ok());
  Variable w{"w", Tensor(Shape{1})};
  float grad = 1;
  w.grad = &grad;
  std::vector<float> seen;
  for (int step = 0; step < 3; ++step) {
    CHECK((*sgd)->learning_rate() == (step <= 1 ? 1.0f : 0.25f));
    (*sgd)->Apply({&w});
    seen.push_back(w.value[0]);
  }
  CHECK(seen == std::vector<float>{-1, -2, -2.25f});  // Rates 1, 1 (step 1 <= boundary), 0.25.
  CHECK_THAT(std::string((*sgd)->set_learning_rate(0.1f).message()), Contains("cannot be set"));

  OptimizerSpec constant{.name = "sgd", .learning_rate = 0.5f};
  auto plain = MakeOptimizer(constant);
  REQUIRE(plain.ok());
  REQUIRE((*plain)->set_learning_rate(0.125f).ok());
  Variable u{"u", Tensor(Shape{1})};
  u.grad = &grad;
  (*plain)->Apply({&u});
  CHECK(u.value[0] == -0.125f);
  CHECK_THAT(std::string((*plain)->set_learning_rate(0).message()), Contains("must be positive"));
}

}  // namespace
}  // namespace ringwork
