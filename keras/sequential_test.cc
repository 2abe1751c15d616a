#include "keras/sequential.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "data/fashion_mnist.h"
#include "keras/gradient_check_testing.h"
#include "strategy/variable.h"

namespace ringwork {
namespace {

Sequential Mlp(const std::string& last_activation = "") {
  Sequential model;
  model.Add(Flatten());
  model.Add(Dense(256, {.activation = "relu"}));
  model.Add(Dense(128, {.activation = "relu"}));
  model.Add(Dense(10, {.activation = last_activation}));
  return model;
}

CompileOptions Options(bool from_logits = true) {
  CompileOptions o;
  o.loss = {"sparse_categorical_crossentropy", from_logits};
  o.optimizer = {.name = "adam", .learning_rate = 1e-3f};
  o.metrics = {"accuracy"};
  o.intra_op_threads = 1;
  return o;
}

TEST_CASE("summary lists layers, shapes and Keras' parameter counts", "[sequential]") {
  Sequential model = Mlp();
  REQUIRE(model.Compile(Options()).ok());
  REQUIRE(model.Build({28, 28, 1}).ok());
  const std::string summary = model.Summary();
  INFO(summary);
  CHECK(summary.find(" flatten (Flatten)           (None, 784)               0") !=
        std::string::npos);
  CHECK(summary.find(" dense (Dense)               (None, 256)               200,960") !=
        std::string::npos);
  CHECK(summary.find(" dense_2 (Dense)             (None, 10)                1,290") !=
        std::string::npos);
  CHECK(summary.find("Total params: 235,146") != std::string::npos);
}

TEST_CASE("gradients below a Flatten match finite differences; no input gradient is needed",
          "[sequential]") {
  // Flatten first: the backward pass stops at the first Dense layer, which computes
  // its weights' gradients but no input gradient (nobody below would use it).
  Sequential model;
  model.Add(Flatten());
  model.Add(Dense(5, {.activation = "tanh"}));
  model.Add(Dense(3));
  CompileOptions options = Options();
  // A rate so small that updates round away: steps leave the weights as they are.
  options.optimizer = {.name = "sgd", .learning_rate = 1e-30f};
  REQUIRE(model.Compile(options).ok());
  Batch batch;
  batch.features = Tensor({4, 2, 3, 1});
  for (int64_t i = 0; i < batch.features.size(); ++i)
    batch.features[i] = std::sin(0.7f * static_cast<float>(i));
  batch.labels = {0, 2, 1, 2};
  CheckGradientsByFiniteDifferences(model, batch);
  CHECK(model.trainable_variables().size() ==
        4);  // dense/kernel, dense/bias, dense_1/kernel, dense_1/bias
}

TEST_CASE("a model learns synthetic images and reports loss and accuracy", "[sequential]") {
  TrainTest data = SyntheticImages(4096, 1024, 7);
  Dataset train = Dataset::FromExamples(std::move(data.train));
  Dataset test = Dataset::FromExamples(std::move(data.test));
  Sequential model = Mlp();
  REQUIRE(model.Compile(Options()).ok());
  FitOptions fit;
  fit.epochs = 4;
  fit.batch_size = 64;
  fit.verbose = 0;
  fit.validation_data = &test;
  auto history = model.Fit(train, fit);
  REQUIRE(history.ok());
  const auto loss = (*history)["loss"];
  REQUIRE(loss.size() == 4);
  CHECK(loss.back() < loss.front());
  CHECK((*history)["val_accuracy"].back() > 0.6);
  auto result = model.Evaluate(test);
  REQUIRE(result.ok());
  CHECK(result->examples == 1024);
  CHECK(result->metrics.at("accuracy") == Approx((*history)["val_accuracy"].back()));
}

TEST_CASE("a softmax output is fused into the loss and predictions are probabilities",
          "[sequential]") {
  TrainTest data = SyntheticImages(512, 64, 9);
  Sequential model = Mlp("softmax");
  REQUIRE(model.Compile(Options(/*from_logits=*/false)).ok());
  FitOptions fit;
  fit.batch_size = 32;
  fit.verbose = 0;
  REQUIRE(model.Fit(Dataset::FromExamples(data.train), fit).ok());
  auto probs = model.Predict(data.test.features);
  REQUIRE(probs.ok());
  CHECK(probs->shape() == Shape{64, 10});
  for (int64_t r = 0; r < 64; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < 10; ++c) sum += (*probs)[r * 10 + c];
    CHECK(sum == Approx(1.0).epsilon(1e-4));
  }
}

TEST_CASE("each Dropout layer draws its own mask", "[sequential]") {
  // Keras gives every layer a seed of its own: two Dropout layers of one model
  // (named as Sequential names them), at the same step, on the same input, drop
  // different units.
  std::vector<std::unique_ptr<Layer>> layers;
  layers.push_back(Dropout(0.5));
  layers.push_back(Dropout(0.5));
  layers[0]->set_name("dropout");
  layers[1]->set_name("dropout_1");
  KernelContext kernels({1, Precision::kFloat32});
  Tensor ones({4, 256});
  for (int64_t i = 0; i < ones.size(); ++i) ones[i] = 1.f;
  std::vector<std::vector<bool>> kept;
  for (auto& layer : layers) {
    REQUIRE(layer->Build({256}, BuildContext{42}).ok());
    layer->set_training_step(7);
    Tensor out;
    REQUIRE(layer->Forward(kernels, ones, &out, /*training=*/true).ok());
    std::vector<bool> mask;
    for (int64_t i = 0; i < out.size(); ++i) mask.push_back(out[i] != 0.f);
    kept.push_back(mask);
  }
  CHECK(kept[0] != kept[1]);
}

TEST_CASE("a small CNN trains a step", "[sequential]") {
  TrainTest data = SyntheticImages(256, 32, 11);
  Sequential model;
  model.Add(Conv2D(8, 3, {.padding = "same", .activation = "relu"}));
  model.Add(MaxPool2D(2));
  model.Add(Conv2D(16, 3, {.padding = "same", .activation = "relu"}));
  model.Add(AveragePooling2D(2));
  model.Add(Flatten());
  model.Add(Dropout(0.25));
  model.Add(Dense(10));
  REQUIRE(model.Compile(Options()).ok());
  FitOptions fit;
  fit.batch_size = 32;
  fit.verbose = 0;
  auto history = model.Fit(Dataset::FromExamples(data.train), fit);
  REQUIRE(history.ok());
  CHECK(std::isfinite((*history)["loss"][0]));
  CHECK(model.Summary().find("conv2d_1 (Conv2D)") != std::string::npos);
}

// Compiles `model` (3 classes, a rate that leaves the weights as they are) and
// checks its gradients on a batch of four 3x3x2 images.
void CheckImageModelGradients(Sequential& model, const std::set<std::string>& zero_gradient = {}) {
  CompileOptions options = Options();
  options.optimizer = {.name = "sgd", .learning_rate = 1e-30f};
  REQUIRE(model.Compile(options).ok());
  Batch batch;
  batch.features = Tensor({4, 3, 3, 2});
  for (int64_t i = 0; i < batch.features.size(); ++i)
    batch.features[i] = std::sin(0.9f * static_cast<float>(i));
  batch.labels = {0, 2, 1, 2};
  CheckGradientsByFiniteDifferences(model, batch, 3, zero_gradient);
}

TEST_CASE(
    "LayerNormalization, GlobalAveragePooling2D and Reshape: gradients match finite differences",
    "[sequential]") {
  Sequential model;
  model.Add(Conv2D(4, 3, {.padding = "same", .activation = "tanh"}));
  model.Add(LayerNormalization());      // Over the 4 channels of each position.
  model.Add(GlobalAveragePooling2D());  // [3, 3, 4] -> [4]
  model.Add(Reshape({2, -1}));          // -> [2, 2]
  model.Add(Flatten());
  model.Add(Dense(5, {.activation = "tanh"}));
  model.Add(LayerNormalization({.center = false}));
  model.Add(Dense(3));
  CheckImageModelGradients(model);
  const std::string summary = model.Summary();
  INFO(summary);
  CHECK(summary.find(
            " global_average_pooling2d (GlobalAveragePooling2D)  (None, 4)                 0\n") !=
        std::string::npos);
  CHECK(summary.find(
            " layer_normalization (LayerNormalization)           (None, 3, 3, 4)           8\n") !=
        std::string::npos);
  CHECK(summary.find("reshape (Reshape)") != std::string::npos);
  CHECK(model.param_count() == (3 * 3 * 2 * 4 + 4) + 8 + (4 * 5 + 5) + 5 + (5 * 3 + 3));
}

TEST_CASE("LayerNormalization gives each vector zero mean and unit variance", "[sequential]") {
  Sequential model;
  model.Add(LayerNormalization({.epsilon = 1e-6f}));
  REQUIRE(model.Compile(Options()).ok());
  Tensor x({3, 8});
  for (int64_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i % 5) * 3 - 2 + static_cast<float>(i / 8);
  absl::StatusOr<Tensor> y = model.Predict(x);
  REQUIRE(y.ok());
  for (int64_t r = 0; r < 3; ++r) {
    double mean = 0, squares = 0;
    for (int64_t c = 0; c < 8; ++c) mean += (*y)[r * 8 + c] / 8.0;
    for (int64_t c = 0; c < 8; ++c)
      squares += ((*y)[r * 8 + c] - mean) * ((*y)[r * 8 + c] - mean) / 8.0;
    CHECK(mean == Approx(0).margin(1e-6));
    CHECK(squares == Approx(1).epsilon(1e-4));
  }
}

TEST_CASE(
    "BatchNormalization: gradients match finite differences; summary counts moving statistics",
    "[sequential]") {
  Sequential model;
  model.Add(Conv2D(4, 3, {.padding = "same"}));
  model.Add(BatchNormalization());  // Over the batch's 4 x 3 x 3 positions per channel.
  model.Add(ActivationLayer("tanh"));
  model.Add(GlobalAveragePooling2D());
  model.Add(Dense(5));
  model.Add(BatchNormalization({.center = false}));
  model.Add(ActivationLayer("tanh"));
  model.Add(Dense(3));
  // A bias before a BatchNormalization: the batch mean takes it away.
  CheckImageModelGradients(model, {"conv2d/bias", "dense/bias"});
  const std::string summary = model.Summary();
  INFO(summary);
  CHECK(summary.find(
            " batch_normalization (BatchNormalization)           (None, 3, 3, 4)           16\n") !=
        std::string::npos);
  CHECK(summary.find("Total params: 150\n") != std::string::npos);
  CHECK(summary.find("Trainable params: 132\n") != std::string::npos);
  CHECK(summary.find("Non-trainable params: 18\n") != std::string::npos);
  CHECK(model.weights().size() == model.trainable_variables().size() + 4);
}

TEST_CASE("SyncBatchNormalization on one worker: gradients match finite differences",
          "[sequential]") {
  Sequential model;
  model.Add(Conv2D(4, 3, {.padding = "same"}));
  model.Add(SyncBatchNormalization());
  model.Add(ActivationLayer("tanh"));
  model.Add(GlobalAveragePooling2D());
  model.Add(Dense(3));
  CheckImageModelGradients(model, {"conv2d/bias"});
}

TEST_CASE("BatchNormalization keeps moving statistics of the batches and uses them in inference",
          "[sequential]") {
  Sequential model;
  model.Add(BatchNormalization({.momentum = 0.5f, .epsilon = 1e-6f}));
  REQUIRE(model.Compile(Options()).ok());
  Batch batch;
  batch.features = Tensor({4, 2});
  const std::vector<float> values = {1, 10, 3, 20, 5, 30, 7, 40};  // Means 4, 25; variances 5, 125.
  for (int64_t i = 0; i < 8; ++i) batch.features[i] = values[i];
  batch.labels = {0, 1, 0, 1};
  REQUIRE(model.TrainStep(batch).ok());
  std::vector<Variable*> weights = model.weights();
  REQUIRE(weights.size() == 4);  // gamma, beta, moving_mean, moving_variance
  CHECK(weights[2]->name == "batch_normalization/moving_mean");
  CHECK(weights[2]->value[0] == 2.0f);  // 0 * 0.5 + 4 * 0.5
  CHECK(weights[2]->value[1] == 12.5f);
  CHECK(weights[3]->value[0] == 3.0f);  // 1 * 0.5 + 5 * 0.5
  CHECK(weights[3]->value[1] == 63.0f);
  // Inference normalizes with the moving statistics, not the batch's.
  absl::StatusOr<Tensor> y = model.Predict(batch.features);
  REQUIRE(y.ok());
  // gamma and beta moved by one Adam step of at most the learning rate (1e-3).
  CHECK((*y)[0] == Approx((1 - 2.0) / std::sqrt(3.0)).margin(2e-3));
  CHECK((*y)[7] == Approx((40 - 12.5) / std::sqrt(63.0)).epsilon(2e-3));
}

TEST_CASE("misconfigured models are refused with clear messages", "[sequential]") {
  {
    Sequential empty;
    auto st = empty.Compile(Options());
    CHECK(std::string(st.message()) == "the model has no layers");
  }
  {
    Sequential model;
    model.Add(Dense(10, {.activation = "swish"}));
    REQUIRE(model.Compile(Options()).ok());
    auto st = model.Build({4});
    CHECK(std::string(st.message()) ==
          "building layer dense for input [4]: unknown activation \"swish\"; expected relu, "
          "tanh, sigmoid, gelu, softmax or linear");
  }
  {
    Sequential model;
    model.Add(Conv2D(4, 5));
    REQUIRE(model.Compile(Options()).ok());
    auto st = model.Build({3, 3, 1});
    CHECK(std::string(st.message()).find("do not fit a [3, 3, 1] input") != std::string::npos);
  }
  {
    Sequential model;
    model.Add(Reshape({5, -1}));
    REQUIRE(model.Compile(Options()).ok());
    CHECK(std::string(model.Build({3, 4}).message()) ==
          "building layer reshape for input [3, 4]: reshape: cannot reshape [3, 4] to [5, -1]: the "
          "-1 "
          "dimension cannot be inferred");
  }
  {
    Sequential model;
    model.Add(GlobalAveragePooling2D());
    REQUIRE(model.Compile(Options()).ok());
    CHECK(std::string(model.Build({784}).message())
              .find("global_average_pooling2d needs [height, width, channels] inputs, got [784]") !=
          std::string::npos);
  }
  {
    Sequential model = Mlp();
    CompileOptions o = Options();
    o.optimizer.name = "lamb";
    CHECK(std::string(model.Compile(o).message()) ==
          "unknown optimizer \"lamb\"; expected sgd, adam, adamw, rmsprop or adagrad");
  }
}

// The same values in every run.
Tensor SineInputs(Shape shape) {
  Tensor x(std::move(shape));
  for (int64_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * i) + 0.2f * std::cos(1.3f * i);
  return x;
}

TEST_CASE("Dense acts on the last axis of a rank-2 example, as Keras' (45 parameters)",
          "[sequential]") {
  Sequential dense;
  auto layer = Dense(5, {.activation = "tanh"});
  Layer* d = layer.get();
  dense.Add(std::move(layer));
  CompileOptions compile;
  compile.loss = {"mse"};
  compile.optimizer = {.name = "sgd", .learning_rate = 1e-30f};
  compile.intra_op_threads = 1;
  REQUIRE(dense.Compile(compile).ok());
  REQUIRE(dense.Build({2, 8}).ok());
  CHECK(d->output_shape() == Shape{2, 5});
  int64_t parameters = 0;
  for (const Variable* v : d->weights()) parameters += v->size();
  CHECK(parameters == 45);  // A [8, 5] kernel and 5 biases (flattening: 85).
  const Tensor x = SineInputs({3, 2, 8});
  absl::StatusOr<Tensor> y = dense.Predict(x);
  REQUIRE(y.ok());
  REQUIRE(y->shape() == Shape{3, 2, 5});
  const float* kernel = d->weights()[0]->value.data();
  const float* bias = d->weights()[1]->value.data();
  for (int64_t row = 0; row < 6; ++row) {  // Each example's two vectors, alike.
    for (int64_t u = 0; u < 5; ++u) {
      double z = bias[u];
      for (int64_t i = 0; i < 8; ++i) z += x.data()[row * 8 + i] * kernel[i * 5 + u];
      CHECK(y->data()[row * 5 + u] == Approx(std::tanh(z)).epsilon(1e-5));
    }
  }
  // Its gradients, inside a model that classifies (Flatten after it).
  Sequential model;
  model.Add(Dense(5, {.activation = "tanh"}));
  model.Add(Flatten());
  model.Add(Dense(3));
  compile.loss = {"sparse_categorical_crossentropy", true};
  REQUIRE(model.Compile(compile).ok());
  REQUIRE(model.Build({2, 8}).ok());
  Batch batch;
  batch.features = SineInputs({4, 2, 8});
  batch.labels = {0, 1, 2, 1};
  CheckGradientsByFiniteDifferences(model, batch, 1);
  // flatten_input keeps the old reading (a Flatten before it).
  Sequential flat;
  auto flattening = Dense(5, {.flatten_input = true});
  Layer* f = flattening.get();
  flat.Add(std::move(flattening));
  REQUIRE(flat.Compile(compile).ok());
  REQUIRE(flat.Build({2, 8}).ok());
  CHECK(f->output_shape() == Shape{5});
  CHECK(f->weights()[0]->value.shape() == Shape{16, 5});
}

}  // namespace
}  // namespace ringwork
