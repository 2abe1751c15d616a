// Layers over sequences ([steps, channels] examples): gradients against finite
// differences, shapes and parameter counts as Keras'. TF.js predictions on the
// same weights: keras_import_test.cc; ONNX Runtime's: onnx_export_test.cc.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <vector>

#include "keras/applications.h"
#include "keras/gradient_check_testing.h"
#include "keras/sequential.h"

namespace ringwork {
namespace {

// Four examples of shape `example`, values spread enough that no two of a
// pooling window tie.
Batch SequenceBatch(const Shape& example) {
  Batch batch;
  batch.features = Tensor(WithBatch(4, example));
  for (int64_t i = 0; i < batch.features.size(); ++i) {
    batch.features[i] = std::sin(0.9f * static_cast<float>(i)) + 0.01f * static_cast<float>(i % 7);
  }
  batch.labels = {0, 2, 1, 2};
  return batch;
}

TEST_CASE("Conv1D, MaxPooling1D, AveragePooling1D and global pools: Keras' shapes, gradients",
          "[sequence]") {
  for (bool global_max : {false, true}) {
    INFO((global_max ? "GlobalMaxPooling1D" : "GlobalAveragePooling1D"));
    Sequential model;
    model.Add(Conv1D(4, 3, {.padding = "same", .activation = "tanh"}));       // [9, 2] -> [9, 4]
    model.Add(MaxPooling1D(2));                                               // -> [4, 4]
    model.Add(Conv1D(5, 2, {.strides = 2, .activation = "tanh"}));            // -> [2, 5]
    model.Add(AveragePooling1D(2, {.strides = 1, .padding = "same"}));        // -> [2, 5]
    model.Add(global_max ? GlobalMaxPooling1D() : GlobalAveragePooling1D());  // -> [5]
    model.Add(Dense(3));
    REQUIRE(model.Compile(FrozenSgd()).ok());
    REQUIRE(model.Build({9, 2}).ok());
    const std::string summary = model.Summary();
    INFO(summary);
    for (const char* part : {"conv1d (Conv1D)", "(None, 9, 4)", "max_pooling1d (MaxPooling1D)",
                             "(None, 4, 4)", "(None, 2, 5)", "(AveragePooling1D)", "(None, 5)"}) {
      CHECK_THAT(summary, Catch::Contains(part));
    }
    CHECK(model.trainable_variables()[0]->value.shape() == Shape{3, 2, 4});  // Keras' [k, in, out].
    CHECK(model.param_count() == (3 * 2 * 4 + 4) + (2 * 4 * 5 + 5) + (5 * 3 + 3));
    CheckGradientsByFiniteDifferences(model, SequenceBatch({9, 2}), 1);
  }
}

TEST_CASE("rectangular and dilated convolutions: Keras' shapes, gradients, what Keras refuses",
          "[sequence][conv]") {
  Sequential model;
  model.Add(Conv2D(3, {3, 2}, {.dilation_rate = {2, 1}, .activation = "tanh"}));  // -> [3, 4, 3]
  model.Add(Conv2D(2, {1, 2}, {.strides = {1, 2}, .padding = "same"}));           // -> [3, 2, 2]
  model.Add(Reshape({6, 2}));
  model.Add(Conv1D(2, 2, {.dilation_rate = 3}));  // -> [3, 2]
  model.Add(Flatten());
  model.Add(Dense(3));
  REQUIRE(model.Compile(FrozenSgd()).ok());
  REQUIRE(model.Build({7, 5, 2}).ok());
  CHECK(model.trainable_variables()[0]->value.shape() == Shape{3, 2, 2, 3});
  CHECK(model.trainable_variables()[2]->value.shape() == Shape{1, 2, 3, 2});
  PerturbWeights(model, 0.2f);
  CheckGradientsByFiniteDifferences(model, SequenceBatch({7, 5, 2}), 1);
  // Each refused: the layer, its input, the message.
  const auto refused = [](std::unique_ptr<Layer> layer, const Shape& input) {
    Sequential model;
    model.Add(std::move(layer));
    REQUIRE(model.Compile(FrozenSgd()).ok());
    return std::string(model.Build(input).message());
  };
  CHECK_THAT(refused(Conv2D(2, 3, {.strides = 2, .dilation_rate = 2}), {6, 6, 2}),
             Catch::Contains("strides and dilation_rate above 1 together are refused, as Keras"));
  CHECK_THAT(refused(Conv1D(2, 3, {.strides = {1, 2}}), {6, 2}),
             Catch::Contains("strides and dilation_rate are one number"));
  CHECK_THAT(refused(Conv2D(2, {5, 1}, {.dilation_rate = 2}), {6, 6, 2}),
             Catch::Contains(
                 "2 filters of 5x1 with stride 1x1, dilation 2x2 and valid padding do not fit"));
}

TEST_CASE("GlobalMaxPooling2D: the largest value of each channel; ties share the gradient",
          "[sequence]") {
  Sequential model;
  model.Add(Conv2D(3, 2, {.activation = "tanh"}));  // [3, 3, 2] -> [2, 2, 3]
  model.Add(GlobalMaxPooling2D());
  model.Add(Dense(3));
  REQUIRE(model.Compile(FrozenSgd()).ok());
  CheckGradientsByFiniteDifferences(model, SequenceBatch({3, 3, 2}), 1);

  std::unique_ptr<Layer> pool = GlobalMaxPooling1D();
  REQUIRE(pool->Build({3, 2}, {}).ok());
  KernelContext kernels(KernelOptions{1, Precision::kFloat32}, 1);
  // One example of 3 steps, 2 channels: channel 0's max once, channel 1's twice.
  Tensor x({1, 3, 2}, {1, 5, 4, -2, 2, 5}), y, dx;
  REQUIRE(pool->Forward(kernels, x, &y, true).ok());
  CHECK(std::vector<float>(y.data(), y.data() + 2) == std::vector<float>{4, 5});
  REQUIRE(pool->Backward(kernels, x, y, Tensor({1, 2}, {1, 1}), &dx).ok());
  CHECK(std::vector<float>(dx.data(), dx.data() + 6) == std::vector<float>{0, 0.5f, 1, 0, 0, 0.5f});
}

TEST_CASE(
    "SimpleRNN, LSTM and GRU (reset_after both ways): Keras' weights, gradients by finite "
    "differences",
    "[sequence][recurrent]") {
  struct Case {
    const char* name;
    std::function<std::unique_ptr<Layer>(bool)> make;  // return_sequences
    Shape kernel, recurrent, bias;
  };
  const std::vector<Case> cases = {
      {"LSTM", [](bool seq) { return LSTM(3, {.return_sequences = seq}); }, {2, 12}, {3, 12}, {12}},
      {"SimpleRNN",
       [](bool seq) { return SimpleRNN(3, {.return_sequences = seq}); },
       {2, 3},
       {3, 3},
       {3}},
      {"GRU", [](bool seq) { return GRU(3, {.return_sequences = seq}); }, {2, 9}, {3, 9}, {2, 9}},
      {"GRU reset_after=false",
       [](bool seq) { return GRU(3, {.return_sequences = seq, .reset_after = false}); },
       {2, 9},
       {3, 9},
       {9}},
  };
  for (const Case& c : cases) {
    for (bool sequences : {true, false}) {
      INFO(c.name << (sequences ? ", return_sequences" : ""));
      Sequential model;
      model.Add(c.make(sequences));
      if (sequences) model.Add(c.make(false));  // A stack: the first one's every output counts.
      model.Add(Dense(3));
      REQUIRE(model.Compile(FrozenSgd()).ok());
      REQUIRE(model.Build({5, 2}).ok());
      CHECK(model.trainable_variables()[0]->value.shape() == c.kernel);
      CHECK(model.trainable_variables()[1]->value.shape() == c.recurrent);
      CHECK(model.trainable_variables()[2]->value.shape() == c.bias);
      // Initial weights move the state enough that no gradient is tiny.
      PerturbWeights(model, 0.2f);
      CheckGradientsByFiniteDifferences(model, SequenceBatch({5, 2}), 1);
    }
  }
}

TEST_CASE(
    "MultiHeadAttention, PositionEmbedding and a TransformerEncoder: gradients by finite "
    "differences, Keras' weight shapes",
    "[sequence][attention]") {
  SymbolicTensor x = Input({5, 4});
  SymbolicTensor h = TransformerEncoder(Apply(PositionEmbedding(6), x), 4, 2, 6);
  Model model(x, Apply(Dense(3), Apply(GlobalAveragePooling1D(), h)));
  REQUIRE(model.Compile(FrozenSgd()).ok());
  REQUIRE(model.Build({5, 4}).ok());
  std::vector<Shape> shapes;
  for (const Variable* v : model.trainable_variables()) shapes.push_back(v->value.shape());
  // PositionEmbedding, then the attention's query, key, value and output.
  CHECK(shapes[0] == Shape{6, 4});
  CHECK(shapes[1] == Shape{4, 2, 2});
  CHECK(shapes[2] == Shape{2, 2});
  CHECK(shapes[7] == Shape{2, 2, 4});
  CHECK(shapes[8] == Shape{4});
  for (Variable* v : model.trainable_variables()) {
    for (int64_t i = 0; i < v->size(); ++i) v->value[i] += 0.3f * std::sin(1.3f * i);
  }
  // q . b_k shifts a row's scores alike, which the softmax ignores.
  CheckGradientsByFiniteDifferences(model, SequenceBatch({5, 4}), 1,
                                    {"multi_head_attention/key/bias"});
}

TEST_CASE("LSTM's forget-gate bias starts at 1; recurrent kernels start orthogonal",
          "[sequence][recurrent]") {
  Sequential model;
  model.Add(LSTM(4));
  REQUIRE(model.Compile(FrozenSgd()).ok());
  REQUIRE(model.Build({3, 2}).ok());
  const Tensor& bias = model.trainable_variables()[2]->value;
  for (int64_t i = 0; i < 16; ++i) CHECK(bias[i] == (i >= 4 && i < 8 ? 1.f : 0.f));
  // [4, 16]: orthonormal rows.
  const Tensor& u = model.trainable_variables()[1]->value;
  for (int64_t a = 0; a < 4; ++a) {
    for (int64_t b = 0; b < 4; ++b) {
      double dot = 0;
      for (int64_t j = 0; j < 16; ++j) dot += u[a * 16 + j] * u[b * 16 + j];
      CHECK(dot == Approx(a == b ? 1.0 : 0.0).margin(1e-6));
    }
  }
}

TEST_CASE("recurrent and attention layers predict a batch as each of its examples alone",
          "[sequence][recurrent]") {
  // Each batch size has its own matmuls: 5 examples at once, then one by one.
  for (int kind = 0; kind < 4; ++kind) {
    INFO("kind " << kind);
    Sequential model;
    if (kind == 0) model.Add(LSTM(7, {.return_sequences = true}));
    if (kind == 1) model.Add(GRU(9, {.reset_after = false}));
    if (kind == 2) model.Add(GRU(4));
    if (kind == 3) model.Add(MultiHeadAttention(2, 3));
    model.Add(Flatten());
    model.Add(Dense(3));
    REQUIRE(model.Compile(FrozenSgd()).ok());
    Tensor five({5, 6, 2});
    for (int64_t i = 0; i < five.size(); ++i) five[i] = std::sin(0.7f * static_cast<float>(i));
    absl::StatusOr<Tensor> all = model.Predict(five);
    REQUIRE(all.ok());
    for (int64_t e = 0; e < 5; ++e) {
      Tensor one({1, 6, 2}, std::vector<float>(five.data() + e * 12, five.data() + (e + 1) * 12));
      absl::StatusOr<Tensor> alone = model.Predict(one);
      REQUIRE(alone.ok());
      for (int64_t c = 0; c < 3; ++c) {
        CHECK((*alone)[c] == Approx((*all)[e * 3 + c]).margin(1e-6));
      }
    }
  }
}

TEST_CASE("1D layers refuse inputs that are not sequences, naming the shape", "[sequence]") {
  for (auto make : {+[] { return Conv1D(2, 3); }, +[] { return MaxPooling1D(2); },
                    +[] { return GlobalMaxPooling1D(); }}) {
    Sequential model;
    model.Add(make());
    REQUIRE(model.Compile(FrozenSgd()).ok());
    CHECK_THAT(std::string(model.Build({4, 4, 2}).message()),
               Catch::Contains("needs [steps, channels] inputs, got [4, 4, 2]"));
  }
  Sequential wide;
  wide.Add(Conv1D(2, 5));
  REQUIRE(wide.Compile(FrozenSgd()).ok());
  CHECK_THAT(std::string(wide.Build({3, 2}).message()),
             Catch::Contains(
                 "2 filters of 5 with stride 1, dilation 1 and valid padding do not fit a [3, 2]"));
}

}  // namespace
}  // namespace ringwork
