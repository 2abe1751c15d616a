// Masks over time steps (keras/sequence_masks.h): gradients through masked
// recurrent layers and GlobalAveragePooling1D against finite differences; padding
// changes nothing a model computes from the data steps; models where a mask meets
// a layer that cannot honour it are refused, naming both. TF.js' predictions for
// masked models on the same weights: keras_import_test.cc.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <vector>

#include "keras/applications.h"
#include "keras/gradient_check_testing.h"
#include "keras/onnx_export.h"
#include "keras/sequential.h"

namespace ringwork {
namespace {

using Catch::Matchers::Contains;

// Which steps of the four examples of 6 steps hold data: padding at the end,
// inside, at the start, and an example of padding only.
const std::vector<std::vector<int>> kKeep = {
    {1, 1, 1, 1, 0, 0}, {1, 0, 1, 1, 0, 1}, {0, 0, 1, 1, 1, 1}, {0, 0, 0, 0, 0, 0}};

// [4, 6, features] of values far from 0, and 0 on the padding steps.
Batch PaddedBatch(int64_t features) {
  Batch batch;
  batch.features = Tensor({4, 6, features});
  for (int64_t i = 0; i < batch.features.size(); ++i) {
    const int64_t example = i / (6 * features), step = (i / features) % 6;
    const float v = 0.5f + std::sin(0.9f * static_cast<float>(i));
    batch.features[i] = kKeep[example][step] ? v : 0.f;
  }
  batch.labels = {0, 2, 1, 2};
  return batch;
}

TEST_CASE("masked SimpleRNN, LSTM and GRU: gradients by finite differences", "[sequence][mask]") {
  const std::vector<std::pair<const char*, std::function<std::unique_ptr<Layer>(bool)>>> cells = {
      {"SimpleRNN", [](bool seq) { return SimpleRNN(3, {.return_sequences = seq}); }},
      {"LSTM", [](bool seq) { return LSTM(3, {.return_sequences = seq}); }},
      {"GRU", [](bool seq) { return GRU(3, {.return_sequences = seq}); }},
      {"GRU reset_after=false",
       [](bool seq) { return GRU(3, {.return_sequences = seq, .reset_after = false}); }},
  };
  for (const auto& [name, make] : cells) {
    INFO(name);
    Sequential model;
    model.Add(Masking());
    model.Add(make(true));  // Its outputs at masked steps repeat the previous ones.
    model.Add(make(false));
    model.Add(Dense(3));
    REQUIRE(model.Compile(FrozenSgd()).ok());
    REQUIRE(model.Build({6, 2}).ok());
    PerturbWeights(model, 0.6f);
    // A larger read-out: the first layer's recurrent gradients stand clear of the noise.
    Tensor& readout = model.trainable_variables()[model.trainable_variables().size() - 2]->value;
    for (int64_t i = 0; i < readout.size(); ++i) readout[i] *= 4.f;
    CheckGradientsByFiniteDifferences(model, PaddedBatch(2), 1);
  }
}

TEST_CASE("masked GlobalAveragePooling1D averages the data steps; gradients", "[sequence][mask]") {
  Sequential model;
  model.Add(Masking());
  model.Add(GlobalAveragePooling1D());
  REQUIRE(model.Compile(FrozenSgd()).ok());
  const Batch batch = PaddedBatch(2);
  absl::StatusOr<Tensor> y = model.Predict(batch.features);
  REQUIRE(y.ok());
  for (int64_t b = 0; b < 4; ++b) {
    for (int64_t c = 0; c < 2; ++c) {
      double sum = 0;
      int kept = 0;
      for (int64_t s = 0; s < 6; ++s) {
        sum += batch.features[(b * 6 + s) * 2 + c];
        kept += kKeep[b][s];
      }
      INFO("example " << b << ", channel " << c);
      CHECK((*y)[b * 2 + c] == Approx(kept == 0 ? 0.0 : sum / kept).epsilon(1e-6));
    }
  }
  Sequential learns;
  learns.Add(Masking());
  learns.Add(Dense(4, {.activation = "tanh"}));  // Per step: the mask passes.
  learns.Add(GlobalAveragePooling1D());
  learns.Add(Dense(3));
  REQUIRE(learns.Compile(FrozenSgd()).ok());
  REQUIRE(learns.Build({6, 2}).ok());
  PerturbWeights(learns, 0.6f);
  CheckGradientsByFiniteDifferences(learns, batch, 1);
}

// An Embedding with mask_zero then `cell`, for `steps` ids.
std::unique_ptr<Sequential> TextModel(int64_t steps, bool mask_zero) {
  auto model = std::make_unique<Sequential>();
  model->Add(Embedding(10, 4, {.mask_zero = mask_zero}));
  model->Add(LSTM(5, {.return_sequences = true}));
  model->Add(GRU(3));
  model->Add(Dense(2));
  REQUIRE(model->Compile(FrozenSgd()).ok());
  REQUIRE(model->Build({steps}).ok());
  PerturbWeights(*model, 0.6f);
  return model;
}

TEST_CASE("padding with id 0 changes nothing: as the sequence without it; no gradient to row 0",
          "[sequence][mask]") {
  const std::vector<float> data = {3, 7, 1, 9, 4};
  const auto unpadded = TextModel(5, false);
  const auto padded = TextModel(9, true);
  const std::vector<Variable*> from = unpadded->trainable_variables(),
                               to = padded->trainable_variables();
  REQUIRE(from.size() == to.size());
  for (size_t i = 0; i < from.size(); ++i) to[i]->value = from[i]->value;
  absl::StatusOr<Tensor> expected = unpadded->Predict(Tensor({1, 5}, data));
  REQUIRE(expected.ok());
  // At the end, at the start, inside, and all three at once.
  const std::vector<std::vector<float>> paddings = {{3, 7, 1, 9, 4, 0, 0, 0, 0},
                                                    {0, 0, 0, 0, 3, 7, 1, 9, 4},
                                                    {3, 0, 7, 1, 0, 0, 9, 0, 4},
                                                    {0, 3, 0, 7, 1, 9, 0, 4, 0}};
  for (const std::vector<float>& ids : paddings) {
    absl::StatusOr<Tensor> y = padded->Predict(Tensor({1, 9}, ids));
    REQUIRE(y.ok());
    for (int64_t i = 0; i < 2; ++i) CHECK((*y)[i] == Approx((*expected)[i]).epsilon(1e-5));
  }
  Batch batch;
  batch.features = Tensor({4, 9});
  for (size_t p = 0; p < paddings.size(); ++p) {
    std::copy(paddings[p].begin(), paddings[p].end(), batch.features.data() + p * 9);
  }
  batch.labels = {0, 1, 1, 0};
  REQUIRE(padded->TrainStep(batch).ok());
  const Variable& table = *padded->trainable_variables()[0];
  for (int64_t d = 0; d < 4; ++d) CHECK(table.grad[d] == 0.f);  // Row 0: padding.
  CheckGradientsByFiniteDifferences(*padded, batch, 2);
}

// Embedding(mask_zero), positions, a transformer block, the masked mean: `steps` ids.
std::unique_ptr<Model> TransformerModel(int64_t steps) {
  SymbolicTensor ids = Input({steps});
  SymbolicTensor h = Apply(Embedding(10, 16, {.mask_zero = true}), ids);
  h = Apply(PositionEmbedding(9), h);
  h = TransformerEncoder(h, 16, 2, 8);
  auto model = std::make_unique<Model>(ids, Apply(Dense(2), Apply(GlobalAveragePooling1D(), h)));
  REQUIRE(model->Compile(FrozenSgd()).ok());
  REQUIRE(model->Build({steps}).ok());
  return model;
}

TEST_CASE("a transformer over padded ids: padding keys get no attention", "[sequence][mask]") {
  const auto unpadded = TransformerModel(5);
  const auto padded = TransformerModel(9);
  const std::vector<Variable*> from = unpadded->trainable_variables(),
                               to = padded->trainable_variables();
  REQUIRE(from.size() == to.size());
  for (size_t i = 0; i < from.size(); ++i) to[i]->value = from[i]->value;
  absl::StatusOr<Tensor> expected = unpadded->Predict(Tensor({1, 5}, {3, 7, 1, 9, 4}));
  absl::StatusOr<Tensor> y = padded->Predict(Tensor({1, 9}, {3, 7, 1, 9, 4, 0, 0, 0, 0}));
  REQUIRE((expected.ok() && y.ok()));
  for (int64_t i = 0; i < 2; ++i) CHECK((*y)[i] == Approx((*expected)[i]).epsilon(1e-5));
  Batch batch;
  batch.features = Tensor({2, 9}, {3, 7, 1, 9, 4, 0, 0, 0, 0, 0, 0, 2, 5, 5, 8, 1, 0, 6});
  batch.labels = {1, 0};
  // Padding reaches nothing: the padding id's embedding row gets no gradient.
  // (The gradients of masked attention against PyTorch's: recurrent_torch_test.)
  REQUIRE(padded->TrainStep(batch).ok());
  const Variable& table = *padded->trainable_variables()[0];
  for (int64_t d = 0; d < 16; ++d) CHECK(table.grad[d] == 0.f);
  CHECK(table.grad[16 * 3] != 0.f);  // Id 3's row does.
}

TEST_CASE("a mask reaching a layer that cannot honour it, or an output, is refused",
          "[sequence][mask]") {
  const auto refused = [](std::vector<std::unique_ptr<Layer>> layers, const Shape& input) {
    Sequential model;
    for (auto& layer : layers) model.Add(std::move(layer));
    REQUIRE(model.Compile(FrozenSgd()).ok());
    const absl::Status built = model.Build(input);
    REQUIRE_FALSE(built.ok());
    return std::string(built.message());
  };
  std::vector<std::unique_ptr<Layer>> conv;
  conv.push_back(Embedding(10, 4, {.mask_zero = true}));
  conv.push_back(Conv1D(2, 3));
  conv.push_back(GlobalMaxPooling1D());
  CHECK_THAT(refused(std::move(conv), {6}), Contains("conv1d (Conv1D) does not support masking") &&
                                                Contains("the mask embedding (Embedding) makes"));
  std::vector<std::unique_ptr<Layer>> flat;
  flat.push_back(Masking());
  flat.push_back(Flatten());
  CHECK_THAT(refused(std::move(flat), {6, 2}), Contains("flatten (Flatten) does not support"));
  std::vector<std::unique_ptr<Layer>> sequences;
  sequences.push_back(Embedding(10, 4, {.mask_zero = true}));
  sequences.push_back(LSTM(3, {.return_sequences = true}));
  CHECK_THAT(refused(std::move(sequences), {6}),
             Contains("the output of lstm (LSTM) carries the mask") &&
                 Contains("losses do not weight steps by a mask"));
  std::vector<std::unique_ptr<Layer>> grid;
  grid.push_back(Embedding(10, 4, {.mask_zero = true}));
  CHECK_THAT(refused(std::move(grid), {3, 2}),
             Contains("mask_zero masks steps, and needs [steps]"));
  std::vector<std::unique_ptr<Layer>> images;
  images.push_back(Masking());
  CHECK_THAT(refused(std::move(images), {4, 4, 1}), Contains("needs [steps, features] inputs"));

  const auto text = TextModel(6, true);
  const absl::Status exported = ExportOnnx(*text, "/nonexistent/model.onnx");
  CHECK_THAT(std::string(exported.message()),
             Contains("embedding (Embedding) masks padding steps") &&
                 Contains("take sequence lengths, not masks"));
}

}  // namespace
}  // namespace ringwork
