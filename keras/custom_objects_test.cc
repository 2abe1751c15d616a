// User-defined losses, metrics and layers, registered by name: a loss is weighted
// and averaged as the built-ins (its gradient checked by finite differences), a
// metric's state is summed over the replicas, two workers training with both stay
// bit-identical, and a model with a layer of one's own saves and loads by name.
#include "keras/custom_objects.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>

#include "base/status_macros.h"
#include "data/fashion_mnist.h"
#include "keras/keras_compile_config.h"
#include "keras/saved_model.h"
#include "keras/sequential.h"
#include "keras/training_state.h"
#include "testing/local_cluster.h"

namespace ringwork {
namespace {

// Softmax cross-entropy from logits over class ids, written as a user would.
class LogitsCrossEntropy : public LossFunction {
 public:
  absl::Status Compute(const Tensor& output, const Batch& batch, float* losses,
                       Tensor* doutput) const override {
    const int64_t n = output.dim(0), width = output.dim(1);
    for (int64_t b = 0; b < n; ++b) {
      const float* z = output.data() + b * width;
      const int32_t label = batch.labels[static_cast<size_t>(b)];
      if (label < 0 || label >= width) return absl::InvalidArgumentError("label out of range");
      double top = z[0], sum = 0;
      for (int64_t j = 1; j < width; ++j) top = std::max<double>(top, z[j]);
      for (int64_t j = 0; j < width; ++j) sum += std::exp(z[j] - top);
      losses[b] = static_cast<float>(std::log(sum) + top - z[label]);
      if (doutput == nullptr) continue;
      for (int64_t j = 0; j < width; ++j) {
        doutput->data()[b * width + j] =
            static_cast<float>(std::exp(z[j] - top) / sum - (j == label ? 1.0 : 0.0));
      }
    }
    return absl::OkStatus();
  }
};

// log(cosh(p - y)) over float targets (Keras' log_cosh).
class LogCosh : public LossFunction {
 public:
  absl::Status Compute(const Tensor& output, const Batch& batch, float* losses,
                       Tensor* doutput) const override {
    const int64_t n = output.dim(0), width = output.size() / n;
    for (int64_t b = 0; b < n; ++b) {
      double sum = 0;
      for (int64_t j = 0; j < width; ++j) {
        const double e = output.data()[b * width + j] - batch.targets.data()[b * width + j];
        sum += std::log(std::cosh(e));
        if (doutput != nullptr) doutput->data()[b * width + j] = std::tanh(e) / width;
      }
      losses[b] = static_cast<float>(sum / width);
    }
    return absl::OkStatus();
  }
};

// How many examples were measured, weighted: summed over replicas, the whole set.
class ExamplesSeen : public MetricFunction {
 public:
  int64_t state_size() const override { return 1; }
  void Update(const Tensor& outputs, const Batch& batch, double, double* state) const override {
    for (int64_t b = 0; b < outputs.dim(0); ++b) {
      state[0] += batch.weights.empty() ? 1.0 : batch.weights[static_cast<size_t>(b)];
    }
  }
  double Result(const double* state) const override { return state[0]; }
};

// The mean probability the model gives the right class (it sees probabilities,
// also where the model's softmax was fused into its loss).
class RightClassProbability : public MetricFunction {
 public:
  int64_t state_size() const override { return 2; }
  void Update(const Tensor& outputs, const Batch& batch, double, double* state) const override {
    const int64_t n = outputs.dim(0), width = outputs.dim(1);
    for (int64_t b = 0; b < n; ++b) {
      state[0] += outputs.data()[b * width + batch.labels[static_cast<size_t>(b)]];
      state[1] += 1;
    }
  }
  double Result(const double* state) const override {
    return state[1] > 0 ? state[0] / state[1] : 0;
  }
};

// y = x * scale, one trainable scale per feature, starting at "initial".
class Scale : public Layer {
 public:
  explicit Scale(float initial) : initial_(initial) {}
  std::string type() const override { return "Scale"; }
  absl::StatusOr<Shape> Build(const Shape& input, const BuildContext&) override {
    scale_ = AddVariable("scale", {input.back()});
    std::fill(scale_->value.data(), scale_->value.data() + scale_->size(), initial_);
    output_shape_ = input;
    return input;
  }
  absl::Status Forward(KernelContext&, const Tensor& x, Tensor* y, bool) override {
    y->Resize(x.shape());
    const int64_t width = scale_->size();
    for (int64_t i = 0; i < x.size(); ++i) y->data()[i] = x.data()[i] * scale_->value[i % width];
    return absl::OkStatus();
  }
  absl::Status Backward(KernelContext&, const Tensor& x, const Tensor&, const Tensor& dy,
                        Tensor* dx) override {
    const int64_t width = scale_->size();
    std::fill(scale_->grad, scale_->grad + width, 0.f);
    for (int64_t i = 0; i < x.size(); ++i) scale_->grad[i % width] += dy.data()[i] * x.data()[i];
    if (dx != nullptr) {
      dx->Resize(x.shape());
      for (int64_t i = 0; i < x.size(); ++i)
        dx->data()[i] = dy.data()[i] * scale_->value[i % width];
    }
    return absl::OkStatus();
  }
  nlohmann::json keras_config() const override { return {{"initial", initial_}}; }

 private:
  float initial_;
  Variable* scale_ = nullptr;
};

void RegisterOnce() {
  static const bool registered = [] {
    REQUIRE(RegisterLoss("logits_cross_entropy", [] {
              return std::make_shared<LogitsCrossEntropy>();
            }).ok());
    REQUIRE(RegisterLoss("log_cosh", [] { return std::make_shared<LogCosh>(); }).ok());
    REQUIRE(RegisterMetric("examples_seen", [] { return std::make_shared<ExamplesSeen>(); }).ok());
    REQUIRE(RegisterMetric("right_class_probability", [] {
              return std::make_shared<RightClassProbability>();
            }).ok());
    REQUIRE(
        RegisterLayer("Scale",
                      [](const nlohmann::json& config) -> absl::StatusOr<std::unique_ptr<Layer>> {
                        if (!config.contains("initial") || !config["initial"].is_number()) {
                          return absl::InvalidArgumentError("no initial scale");
                        }
                        return std::make_unique<Scale>(config["initial"].get<float>());
                      })
            .ok());
    return true;
  }();
  (void)registered;
}

TEST_CASE("a user's loss is weighted and averaged as the built-in ones", "[custom]") {
  RegisterOnce();
  Loss mine = *Loss::Create({"logits_cross_entropy"});
  Loss built_in = *Loss::Create({"sparse_categorical_crossentropy", /*from_logits=*/true});
  CHECK(mine.kind() == Loss::Kind::kCustom);
  Batch batch;
  batch.labels = {2, 0, 1};
  batch.weights = {1.f, 0.5f, 2.f};
  Tensor logits({3, 3}, {0.2f, -1.f, 3.f, 1.5f, 0.1f, -0.3f, -2.f, 0.7f, 0.4f});
  Tensor g_mine, g_built_in;
  const float l_mine = *mine.Compute(logits, batch, &g_mine);
  const float l_built_in = *built_in.Compute(logits, batch, &g_built_in);
  CHECK(l_mine == Approx(l_built_in).epsilon(1e-6));
  for (int64_t i = 0; i < 9; ++i) CHECK(g_mine[i] == Approx(g_built_in[i]).margin(1e-7));

  // log_cosh's gradient against finite differences of its weighted mean.
  Loss log_cosh = *Loss::Create({"log_cosh"});
  Batch numbers;
  numbers.targets = Tensor({3, 2}, {0.5f, -1.f, 2.f, 0.f, 1.f, 1.f});
  numbers.weights = {2.f, 1.f, 0.25f};
  Tensor p({3, 2}, {0.1f, 0.3f, 1.f, -0.8f, 2.5f, 0.2f});
  Tensor grad;
  REQUIRE(log_cosh.Compute(p, numbers, &grad).ok());
  for (int64_t i = 0; i < 6; ++i) {
    constexpr float kH = 1e-2f;
    Tensor up = p, down = p;
    up[i] += kH;
    down[i] -= kH;
    const double numeric =
        (*log_cosh.Compute(up, numbers, nullptr) - *log_cosh.Compute(down, numbers, nullptr)) /
        (2 * kH);
    INFO("element " << i);
    CHECK(grad[i] == Approx(numeric).margin(2e-4));
  }
}

TEST_CASE("names: built-in ones cannot be taken, nor one twice; unknown ones say where to register",
          "[custom]") {
  RegisterOnce();
  auto loss = [] { return std::make_shared<LogCosh>(); };
  CHECK(RegisterLoss("mse", loss).code() == absl::StatusCode::kAlreadyExists);
  CHECK(RegisterLoss("log_cosh", loss).code() == absl::StatusCode::kAlreadyExists);
  CHECK(RegisterMetric("accuracy", [] { return std::make_shared<ExamplesSeen>(); }).code() ==
        absl::StatusCode::kAlreadyExists);
  CHECK(RegisterLayer("Dense", [](const nlohmann::json&) -> absl::StatusOr<std::unique_ptr<Layer>> {
          return std::make_unique<Scale>(1.f);
        }).code() == absl::StatusCode::kAlreadyExists);
  CHECK_THAT(std::string(Loss::Create({"no_such_loss"}).status().message()),
             Catch::Contains("RegisterLoss"));
  CHECK_THAT(std::string(Metric::Create("no_such_metric").status().message()),
             Catch::Contains("RegisterMetric"));
}

TEST_CASE("2 workers train with a user's loss and metrics: bit-identical, metrics of all the data",
          "[custom][distributed]") {
  RegisterOnce();
  TrainTest data = SyntheticImages(1536, 500, 5);
  Dataset train = Dataset::FromExamples(data.train);
  Dataset test = Dataset::FromExamples(data.test);
  LocalCluster::Options options;
  options.num_workers = 2;
  std::vector<uint64_t> fingerprints(2);
  std::vector<std::vector<double>> losses(2);
  std::vector<EvaluateResult> results(2);
  auto run = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
    auto scope = w.strategy->scope();
    Sequential model;
    model.Add(Flatten());
    model.Add(Dense(32, {.activation = "relu"}));
    model.Add(Dense(10));
    CompileOptions compile;
    compile.loss = {"logits_cross_entropy"};
    compile.metrics = {"examples_seen", "accuracy"};
    compile.intra_op_threads = 1;
    RW_RETURN_IF_ERROR(model.Compile(compile));
    FitOptions fit;
    fit.epochs = 2;
    fit.batch_size = 64;
    fit.verbose = 0;
    RW_ASSIGN_OR_RETURN(History history, model.Fit(train, fit));
    RW_ASSIGN_OR_RETURN(results[w.rank], model.Evaluate(test));
    fingerprints[w.rank] = WeightsFingerprint(model);
    losses[w.rank] = history["loss"];
    return absl::OkStatus();
  });
  for (int r = 0; r < 2; ++r) {
    INFO("worker " << r << ": " << run[r].message());
    REQUIRE(run[r].ok());
  }
  CHECK(fingerprints[1] == fingerprints[0]);
  CHECK(losses[1] == losses[0]);
  CHECK(losses[0].back() < losses[0].front());
  for (int r = 0; r < 2; ++r) {
    // Each worker measured 250 examples; the state summed over both counts 500.
    CHECK(results[r].metrics["examples_seen"] == 500);
    CHECK(results[r].metrics == results[0].metrics);
  }
  CHECK(results[0].metrics["accuracy"] > 0.3);
}

TEST_CASE("a fused softmax: a user's metric still reads probabilities", "[custom]") {
  RegisterOnce();
  TrainTest data = SyntheticImages(256, 100, 5);
  Sequential model;
  model.Add(Flatten());
  model.Add(Dense(10, {.activation = "softmax"}));  // Fused into the loss below.
  CompileOptions compile;
  compile.loss = {"sparse_categorical_crossentropy"};
  compile.metrics = {"right_class_probability"};
  REQUIRE(model.Compile(compile).ok());
  REQUIRE(model.Build(data.train.example_shape()).ok());
  const EvaluateResult result = *model.Evaluate(Dataset::FromExamples(data.test));
  const Tensor p = *model.Predict(data.test.features);
  double sum = 0;
  for (int64_t b = 0; b < 100; ++b) sum += p.data()[b * 10 + data.test.labels[b]];
  CHECK(result.metrics.at("right_class_probability") == Approx(sum / 100).epsilon(1e-5));
}

TEST_CASE("a compile config names a user's loss as Keras 3 writes it", "[custom]") {
  RegisterOnce();
  for (const nlohmann::json& loss : {nlohmann::json("log_cosh"),
                                     nlohmann::json{{"module", "builtins"},
                                                    {"class_name", "function"},
                                                    {"config", "Custom>log_cosh"},
                                                    {"registered_name", "Custom>log_cosh"}},
                                     nlohmann::json{{"module", nullptr},
                                                    {"class_name", "log_cosh"},
                                                    {"config", nlohmann::json::object()},
                                                    {"registered_name", nullptr}}}) {
    INFO(loss.dump());
    absl::StatusOr<CompileOptions> read = CompileOptionsFromKeras({{"loss", loss}}, "$");
    REQUIRE(read.ok());
    CHECK(read->loss.name == "log_cosh");
  }
  CHECK_THAT(std::string(CompileOptionsFromKeras({{"loss", "nope"}}, "$").status().message()),
             Catch::Contains("RegisterLoss"));
}

TEST_CASE("no accuracy by default where the loss measures numbers", "[custom]") {
  RegisterOnce();
  auto metrics_for = [](const std::string& loss) {
    Sequential model;
    model.Add(Dense(1));
    CompileOptions compile;
    compile.loss = {loss};
    REQUIRE(model.Compile(compile).ok());
    return model.compile_options().metrics;
  };
  CHECK(metrics_for("sparse_categorical_crossentropy") == std::vector<std::string>{"accuracy"});
  CHECK(metrics_for("binary_crossentropy") == std::vector<std::string>{"accuracy"});
  CHECK(metrics_for("mse").empty());
  CHECK(metrics_for("huber").empty());
  CHECK(metrics_for("log_cosh").empty());
}

TEST_CASE("a model with a user's layer and loss saves and loads by their names", "[custom]") {
  RegisterOnce();
  const std::string path =
      (std::filesystem::temp_directory_path() / "custom_objects_test.keras").string();
  Sequential model;
  model.Add(Dense(4));
  model.Add(std::make_unique<Scale>(0.5f));
  model.Add(Dense(2));
  CompileOptions compile;
  compile.loss = {"log_cosh"};
  compile.optimizer = {.name = "sgd"};
  REQUIRE(model.Compile(compile).ok());
  REQUIRE(model.Build({3}).ok());
  Tensor x({2, 3}, {1.f, 2.f, -1.f, 0.5f, 0.f, 3.f});
  const Tensor before = *model.Predict(x);
  REQUIRE(SaveModel(model, path).ok());

  absl::StatusOr<Model> loaded = LoadModel(path);
  INFO(loaded.status().message());
  REQUIRE(loaded.ok());
  CHECK(loaded->compile_options().loss.name == "log_cosh");
  const Tensor after = *loaded->Predict(x);
  for (int64_t i = 0; i < after.size(); ++i) CHECK(after[i] == before[i]);

  // The Keras config names it as Keras 3 names a registered class.
  const nlohmann::json config = nlohmann::json::parse(*ReadModelJson(path));
  const nlohmann::json& scale = config["config"]["layers"][2];
  CHECK(scale["class_name"] == "Scale");
  CHECK(scale["registered_name"] == "Custom>Scale");
  CHECK(scale["config"]["initial"] == 0.5);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ringwork
