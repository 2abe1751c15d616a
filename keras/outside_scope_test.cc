// A model created outside any strategy.scope() while TF_CONFIG makes this task one
// of several workers does not train alone by mistake: Fit fails with exit 2 and
// says what to do (Compile and Predict stay fine); train_alone keeps the
// single-process run; an evaluator task, a one-worker cluster, an unreadable
// TF_CONFIG and no TF_CONFIG train alone as before; the cluster the process
// resolved with its own flags counts over the environment's; a model created
// inside a scope compiles outside it.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>
#include <string>

#include "base/exit_code.h"
#include "base/status_macros.h"
#include "keras/sequential.h"
#include "testing/local_cluster.h"

namespace ringwork {
namespace {

using Catch::Matchers::Contains;

constexpr char kTwoWorkers[] =
    R"({"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}, "task": {"type": "worker", "index": 1}})";

// TF_CONFIG set for the scope of one test, restored after it.
class ScopedTfConfig {
 public:
  explicit ScopedTfConfig(const char* value) {
    if (const char* was = std::getenv("TF_CONFIG")) previous_ = was;
    setenv("TF_CONFIG", value, 1);
  }
  ~ScopedTfConfig() {
    if (previous_.has_value()) {
      setenv("TF_CONFIG", previous_->c_str(), 1);
    } else {
      unsetenv("TF_CONFIG");
    }
  }

 private:
  std::optional<std::string> previous_;
};

// Compiles a model made outside any scope, predicts with it, then fits it.
absl::Status FitOutsideScope(bool train_alone) {
  Sequential model;
  model.Add(Dense(2));
  CompileOptions options;
  options.loss = {"sparse_categorical_crossentropy", true};
  options.train_alone = train_alone;
  RW_RETURN_IF_ERROR(model.Compile(options));
  RW_RETURN_IF_ERROR(model.Predict(Tensor({2, 3}, {1, 2, 3, 4, 5, 6})).status());
  Examples examples;
  examples.features = Tensor({4, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1});
  examples.labels = {0, 1, 0, 1};
  const Dataset data = Dataset::FromExamples(std::move(examples));
  return model.Fit(data, {.epochs = 1, .batch_size = 4, .verbose = 0}).status();
}

TEST_CASE("fitting a model outside the scope under a 2-worker TF_CONFIG: exit 2, with what to do",
          "[scope]") {
  ScopedTfConfig config(kTwoWorkers);
  const absl::Status refused = FitOutsideScope(false);
  CHECK(ExitCodeFor(refused) == ExitCode::kUsageOrConfig);
  CHECK(static_cast<int>(ExitCodeFor(refused)) == 2);
  const std::string message(refused.message());
  CHECK_THAT(message, Contains("created outside any strategy.scope()"));
  CHECK_THAT(message, Contains("worker:1 of 2 workers"));
  CHECK_THAT(message, Contains("strategy->scope()"));
  CHECK_THAT(message, Contains("train_alone"));
  CHECK(FitOutsideScope(true).ok());
}

TEST_CASE("an evaluator, a one-worker cluster and no TF_CONFIG train alone outside a scope",
          "[scope]") {
  CHECK(FitOutsideScope(false).ok());  // No TF_CONFIG.
  {
    ScopedTfConfig evaluator(
        R"({"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"], "evaluator": ["127.0.0.1:3"]},
            "task": {"type": "evaluator", "index": 0}})");
    CHECK(FitOutsideScope(false).ok());
  }
  {
    ScopedTfConfig one(R"({"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "worker"}})");
    CHECK(FitOutsideScope(false).ok());
  }
  {
    ScopedTfConfig broken("{not json");  // A cluster it cannot read is none it trains in.
    CHECK(FitOutsideScope(false).ok());
  }
}

TEST_CASE("the cluster the process resolved with its flags counts over TF_CONFIG", "[scope]") {
  ScopedTfConfig config(kTwoWorkers);
  absl::StatusOr<ClusterConfig> evaluator =
      ResolveCluster({.tf_config = R"({"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"],
                                    "evaluator": ["127.0.0.1:3"]},
                        "task": {"type": "evaluator", "index": 0}})"},
                     EnvFromProcess());
  REQUIRE(evaluator.ok());
  SetThisProcessCluster(*evaluator);  // As ResolveThisTask records it.
  CHECK(FitOutsideScope(false).ok());
  SetThisProcessCluster(std::nullopt);
}

TEST_CASE("a model created inside the scope compiles outside it, as Keras allows", "[scope]") {
  LocalCluster::Options options;
  options.num_workers = 2;
  ScopedTfConfig config(kTwoWorkers);  // As a worker of a real cluster sees it.
  auto results = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
    std::optional<Sequential> model;
    {
      auto scope = w.strategy->scope();
      model.emplace();
      model->Add(Dense(2));
    }
    CompileOptions compile;
    compile.loss = {"sparse_categorical_crossentropy", true};
    RW_RETURN_IF_ERROR(model->Compile(compile));
    if (model->strategy() != w.strategy) return absl::InternalError("another strategy");
    return model->Build({3});
  });
  for (const absl::Status& r : results) {
    INFO(r.message());
    CHECK(r.ok());
  }
}

}  // namespace
}  // namespace ringwork
