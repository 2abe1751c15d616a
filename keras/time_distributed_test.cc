// TimeDistributed: the wrapped layer's math on every step with one set of weights
// (each step as the layer alone gives it), gradients against finite differences,
// a BatchNormalization's moving statistics over all steps, a mask passing through,
// and the exports. TF.js' own TimeDistributed models: keras_import_test.cc.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "keras/gradient_check_testing.h"
#include "keras/keras_archive.h"
#include "keras/saved_model.h"
#include "keras/sequential.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

using Catch::Matchers::Contains;

Batch Frames() {  // [3, 4, 5, 5, 2]: three clips of four 5x5 frames.
  Batch batch;
  batch.features = Tensor({3, 4, 5, 5, 2});
  for (int64_t i = 0; i < batch.features.size(); ++i) {
    batch.features[i] = 0.5f + std::sin(0.7f * static_cast<float>(i));
  }
  batch.labels = {0, 2, 1};
  return batch;
}

TEST_CASE("TimeDistributed: each step as the layer alone, one set of weights; gradients",
          "[sequence][time_distributed]") {
  Sequential model;
  model.Add(TimeDistributed(Conv2D(3, 3, {.activation = "relu"})));  // -> [4, 3, 3, 3]
  model.Add(TimeDistributed(Flatten()));                             // -> [4, 27]
  model.Add(TimeDistributed(Dense(4, {.activation = "tanh"})));
  model.Add(LSTM(3));
  model.Add(Dense(3));
  REQUIRE(model.Compile(FrozenSgd()).ok());
  REQUIRE(model.Build({4, 5, 5, 2}).ok());
  const std::vector<Variable*> v = model.trainable_variables();
  CHECK(v[0]->name == "time_distributed/kernel");
  CHECK(v[0]->value.shape() == Shape{3, 3, 2, 3});
  CHECK(model.param_count() == (3 * 3 * 2 * 3 + 3) + (27 * 4 + 4) + (4 * 12 + 3 * 12 + 12) + 12);
  PerturbWeights(model, 0.3f);
  const Batch batch = Frames();
  CheckGradientsByFiniteDifferences(model, batch, 2);

  // Step 2 of example 1 through the layer alone, with the wrapper's weights.
  Sequential alone;
  alone.Add(Conv2D(3, 3, {.activation = "relu"}));
  REQUIRE(alone.Compile(FrozenSgd()).ok());
  REQUIRE(alone.Build({5, 5, 2}).ok());
  alone.trainable_variables()[0]->value = v[0]->value;
  alone.trainable_variables()[1]->value = v[1]->value;
  Sequential first;
  first.Add(TimeDistributed(Conv2D(3, 3, {.activation = "relu"})));
  REQUIRE(first.Compile(FrozenSgd()).ok());
  REQUIRE(first.Build({4, 5, 5, 2}).ok());
  first.trainable_variables()[0]->value = v[0]->value;
  first.trainable_variables()[1]->value = v[1]->value;
  absl::StatusOr<Tensor> all = first.Predict(batch.features);
  Tensor frame({1, 5, 5, 2});
  std::copy_n(batch.features.data() + (1 * 4 + 2) * 50, 50, frame.data());
  absl::StatusOr<Tensor> one = alone.Predict(frame);
  REQUIRE((all.ok() && one.ok()));
  for (int64_t i = 0; i < 27; ++i) CHECK((*all)[(1 * 4 + 2) * 27 + i] == (*one)[i]);
}

TEST_CASE("TimeDistributed BatchNormalization learns its statistics over every step",
          "[sequence][time_distributed]") {
  Sequential model;
  model.Add(TimeDistributed(BatchNormalization({.momentum = 0.f})));  // Takes the batch's.
  model.Add(TimeDistributed(Flatten()));
  model.Add(GlobalAveragePooling1D());
  model.Add(Dense(3));
  CompileOptions options = FrozenSgd();
  REQUIRE(model.Compile(options).ok());
  const Batch batch = Frames();
  REQUIRE(model.TrainStep(batch).ok());
  const std::vector<Variable*> weights = model.weights();  // gamma, beta, mean, variance, ...
  REQUIRE(weights[2]->name == "time_distributed/moving_mean");
  for (int64_t c = 0; c < 2; ++c) {  // Channel c over 3 x 4 frames of 5 x 5.
    double sum = 0;
    for (int64_t i = c; i < batch.features.size(); i += 2) sum += batch.features[i];
    CHECK(weights[2]->value[c] == Approx(sum / (3 * 4 * 25)).epsilon(1e-5));
  }
}

TEST_CASE("TimeDistributed passes a mask, goes into a .keras archive and back; refusals",
          "[sequence][time_distributed]") {
  Sequential model;
  model.Add(Embedding(10, 3, {.mask_zero = true}));
  model.Add(TimeDistributed(Dense(4)));
  model.Add(Bidirectional(GRU(2)));
  REQUIRE(model.Compile(FrozenSgd()).ok());
  REQUIRE(model.Build({5}).ok());
  PerturbWeights(model, 0.3f);
  const std::string path = FreshTestDir("time_distributed_archive") + "/model.keras";
  REQUIRE(SaveKerasArchive(model, path).ok());
  absl::StatusOr<Model> loaded = LoadModel(path);
  REQUIRE(loaded.ok());
  const Tensor ids({2, 5}, {3, 1, 0, 0, 0, 0, 4, 4, 0, 9});
  absl::StatusOr<Tensor> a = model.Predict(ids), b = loaded->Predict(ids);
  REQUIRE((a.ok() && b.ok()));
  for (int64_t i = 0; i < a->size(); ++i) CHECK((*a)[i] == (*b)[i]);

  Sequential merge;
  merge.Add(TimeDistributed(Add()));
  REQUIRE(merge.Compile(FrozenSgd()).ok());
  CHECK_THAT(std::string(merge.Build({4, 2}).message()), Contains("cannot wrap a Add"));
  Sequential flat;
  flat.Add(TimeDistributed(Dense(2)));
  REQUIRE(flat.Compile(FrozenSgd()).ok());
  CHECK_THAT(std::string(flat.Build({4}).message()), Contains("needs [steps, ...] inputs"));
}

}  // namespace
}  // namespace ringwork
