// Shared layers (keras/functional.h's Share): one layer called on several
// tensors computes every call with the same weights, its gradient is the sum over
// the calls (finite differences, for a Dense, an LSTM and an Embedding with its
// sparse gradient), the model lists its weights once, replicas of a siamese
// model stay bit-identical on 2 workers, and misuse is refused naming the layer.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "base/status_macros.h"
#include "keras/gradient_check_testing.h"
#include "keras/training_state.h"
#include "testing/local_cluster.h"

namespace ringwork {
namespace {

using Catch::Matchers::Contains;

// Four examples of two inputs [3] side by side, and a label in [0, 3).
Batch PairBatch() {
  Batch batch;
  batch.features = Tensor({4, 6});
  for (int64_t i = 0; i < batch.features.size(); ++i) {
    batch.features[i] = std::sin(0.7f * static_cast<float>(i) + 0.3f);
  }
  batch.labels = {0, 2, 1, 2};
  return batch;
}

TEST_CASE("a shared Dense: gradients of both calls, summed, match finite differences", "[shared]") {
  SymbolicTensor left = Input({3}), right = Input({3});
  SharedLayer tower = Share(Dense(4, {.activation = "tanh"}));
  SymbolicTensor a = Apply(tower, left), b = Apply(tower, right);
  Model model({left, right}, Apply(Dense(3), Apply(Concatenate(), {a, b})));
  REQUIRE(model.Compile(FrozenSgd()).ok());
  REQUIRE(model.Build({6}).ok());
  PerturbWeights(model, 0.3f);
  CheckGradientsByFiniteDifferences(model, PairBatch(), 1);
  // The weights are the owner's, once: dense (3x4 + 4), dense_1 (8x3 + 3).
  std::vector<std::string> names;
  for (const Variable* v : model.weights()) names.push_back(v->name);
  CHECK(names ==
        std::vector<std::string>{"dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"});
  CHECK(model.param_count() == 16 + 27);
  const std::string summary = model.Summary();
  INFO(summary);
  CHECK_THAT(summary, Contains("dense@1 (Dense)"));
}

TEST_CASE("a shared layer's calls compute as the layer itself, and the gradient is their sum",
          "[shared]") {
  // Both calls on the same input: the model is 2 x Dense(x), so one step's
  // gradient is twice that of the same Dense alone.
  auto build = [](bool shared) {
    SymbolicTensor x = Input({3});
    if (!shared) return Model(x, Apply(Dense(3), x));
    SharedLayer dense = Share(Dense(3));
    return Model(x, Apply(Add(), {Apply(dense, x), Apply(dense, x)}));
  };
  Model twice = build(true), once = build(false);
  CompileOptions options = FrozenSgd();
  REQUIRE(twice.Compile(options).ok());
  REQUIRE(once.Compile(options).ok());
  Batch batch;
  batch.features = Tensor({2, 3}, {0.5f, -1, 2, 1, 0.25f, -0.5f});
  batch.labels = {1, 2};
  REQUIRE(twice.Build({3}).ok());
  REQUIRE(once.Build({3}).ok());
  for (size_t i = 0; i < 2; ++i) once.weights()[i]->value = twice.weights()[i]->value;
  for (Variable* v : once.weights()) {
    for (int64_t e = 0; e < v->size(); ++e) v->value[e] *= 2;  // 2 x Dense(x), as one Dense.
  }
  absl::StatusOr<Tensor> a = twice.Predict(batch.features), b = once.Predict(batch.features);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  for (int64_t e = 0; e < a->size(); ++e) CHECK((*a)[e] == Approx((*b)[e]).epsilon(1e-6));
  REQUIRE(twice.TrainStep(batch).ok());
  REQUIRE(once.TrainStep(batch).ok());
  // d/dW of f(2W x) is 2 f'(2W x) x: twice the one Dense's gradient.
  for (size_t i = 0; i < 2; ++i) {
    const Variable& v = *twice.trainable_variables()[i];
    const Variable& w = *once.trainable_variables()[i];
    for (int64_t e = 0; e < v.size(); ++e) {
      CHECK(v.grad[e] == Approx(2 * w.grad[e]).epsilon(1e-5).margin(1e-7));
    }
  }
}

TEST_CASE("every call of a shared layer computes as its first, bit for bit", "[shared]") {
  // Settings a layer settles when it is built (the activation) reach every call.
  SymbolicTensor x = Input({5, 3});
  SharedLayer lstm = Share(LSTM(4, {.return_sequences = true}));
  SharedLayer dense = Share(Dense(3, {.activation = "sigmoid"}));
  Model model(
      std::vector<SymbolicTensor>{x},
      std::vector<SymbolicTensor>{Apply(dense, Apply(lstm, x)), Apply(dense, Apply(lstm, x))});
  CompileOptions options = FrozenSgd();
  options.loss = {"mse"};
  REQUIRE(model.Compile(options).ok());
  Tensor batch({2, 5, 3});
  for (int64_t e = 0; e < batch.size(); ++e) batch[e] = std::cos(1.3f * e);
  const absl::Status built = model.Build({5, 3});
  INFO(built.message());
  REQUIRE(built.ok());
  PerturbWeights(model, 0.5f);
  absl::StatusOr<std::vector<Tensor>> outputs = model.PredictOutputs(batch);
  REQUIRE(outputs.ok());
  CHECK(model.output_names() == std::vector<std::string>{"dense", "dense@1"});
  REQUIRE((*outputs)[0].shape() == Shape{2, 5, 3});
  for (int64_t e = 0; e < (*outputs)[0].size(); ++e) {
    CHECK((*outputs)[0][e] == (*outputs)[1][e]);
    CHECK((*outputs)[0][e] > 0.f);  // The sigmoid.
  }
}

TEST_CASE("a shared LSTM and a shared Embedding (sparse gradient) match finite differences",
          "[shared]") {
  SymbolicTensor first = Input({4}), second = Input({4});
  SharedLayer embed = Share(Embedding(6, 3));
  SharedLayer lstm = Share(LSTM(3));
  SymbolicTensor a = Apply(lstm, Apply(embed, first));
  SymbolicTensor b = Apply(lstm, Apply(embed, second));
  Model model({first, second}, Apply(Dense(3), Apply(Concatenate(), {a, b})));
  REQUIRE(model.Compile(FrozenSgd()).ok());
  Batch batch;
  // Ids 0..5; id 5 only in the second input, id 4 only in the first.
  batch.features = Tensor({3, 8}, {0, 1, 4, 2, 3, 5, 5, 1,  //
                                   4, 4, 2, 0, 1, 3, 2, 5,  //
                                   2, 3, 1, 4, 0, 0, 5, 3});
  batch.labels = {0, 2, 1};
  REQUIRE(model.Build({8}).ok());
  PerturbWeights(model, 0.6f);
  CheckGradientsByFiniteDifferences(model, batch, 1);
  // The table's touched rows are the union of both calls' ids.
  REQUIRE(model.TrainStep(batch).ok());
  const Variable& table = *model.trainable_variables()[0];
  REQUIRE(table.name == "embedding/embeddings");
  CHECK(table.touched_rows == std::vector<int64_t>{0, 1, 2, 3, 4, 5});
}

TEST_CASE("a frozen shared layer stays as it is, trains once unfrozen, and is saved once",
          "[shared]") {
  // Each call sits above a trainable Dense, so the backward pass runs through
  // both calls of the frozen layer.
  SymbolicTensor left = Input({3}), right = Input({3});
  auto dense = Dense(4, {.activation = "tanh"});
  Layer* owner = dense.get();
  SharedLayer tower = Share(std::move(dense));
  SymbolicTensor a = Apply(tower, Apply(Dense(3, {.activation = "tanh"}), left));
  SymbolicTensor b = Apply(tower, Apply(Dense(3, {.activation = "tanh"}), right));
  Model model(std::vector<SymbolicTensor>{left, right},
              Apply(Dense(3), Apply(Concatenate(), {a, b})));
  owner->set_trainable(false);
  REQUIRE(model.Compile(FrozenSgd()).ok());
  REQUIRE(model.Build({6}).ok());
  PerturbWeights(model, 0.3f);
  CHECK(model.trainable_variables().size() == 6);  // Not the tower's.
  CHECK(model.variables().size() == 8);            // Keras' model.variables: all.
  CHECK(model.non_trainable_variables().size() == 2);
  CheckGradientsByFiniteDifferences(model, PairBatch(), 1);
  CompileOptions fast = FrozenSgd();
  fast.optimizer.learning_rate = 0.5f;
  REQUIRE(model.Compile(fast).ok());
  const Tensor before = owner->weights()[0]->value;
  REQUIRE(model.TrainStep(PairBatch()).ok());
  for (int64_t e = 0; e < before.size(); ++e) CHECK(owner->weights()[0]->value[e] == before[e]);
  // Unfrozen after the build, as Keras fine-tunes: both calls' gradients reach it.
  owner->set_trainable(true);
  REQUIRE(model.Compile(FrozenSgd()).ok());
  CHECK(model.trainable_variables().size() == 8);
  CheckGradientsByFiniteDifferences(model, PairBatch(), 1);
  std::vector<std::string> names;
  for (const Variable* v : model.weights()) names.push_back(v->name);
  CHECK(std::count(names.begin(), names.end(), "dense/kernel") == 1);
}

TEST_CASE("a later call that is an output fuses its sigmoid into the loss, as the first does",
          "[shared]") {
  // Logit 30 and label 0: binary cross-entropy from the logit is 30 per output;
  // from a clipped probability it would stop at 15.9.
  SymbolicTensor x = Input({1});
  SharedLayer head = Share(Dense(1, {.activation = "sigmoid"}));
  Model model(std::vector<SymbolicTensor>{x},
              std::vector<SymbolicTensor>{Apply(head, x), Apply(head, x)});
  CompileOptions options = FrozenSgd();
  options.loss = {"binary_crossentropy"};
  REQUIRE(model.Compile(options).ok());
  REQUIRE(model.Build({1}).ok());
  model.weights()[0]->value[0] = 30.f;
  model.weights()[1]->value[0] = 0.f;
  Batch batch;
  batch.features = Tensor({1, 1}, {1.f});
  batch.targets = Tensor({1, 1}, {0.f});
  batch.more_targets = {OutputTargets{{}, Tensor({1, 1}, {0.f})}};
  absl::StatusOr<float> loss = model.TrainStep(batch);
  REQUIRE(loss.ok());
  CHECK(*loss == Approx(60.f).epsilon(1e-4));
}

TEST_CASE("shared layers that cannot be are refused, naming the layer", "[shared]") {
  auto compile_error = [](Model& model, int64_t width = 6) {
    absl::Status status = model.Compile(FrozenSgd());
    if (status.ok()) status = model.Build({width});
    return std::string(status.message());
  };
  {
    SymbolicTensor left = Input({3}), right = Input({3});
    SharedLayer norm = Share(BatchNormalization());
    Model model({left, right}, Apply(Concatenate(), {Apply(norm, left), Apply(norm, right)}));
    CHECK_THAT(compile_error(model), Contains("learns statistics of its batches"));
  }
  {
    SymbolicTensor small = Input({2}), large = Input({4});
    SharedLayer dense = Share(Dense(3));
    Model model({small, large}, Apply(Concatenate(), {Apply(dense, small), Apply(dense, large)}));
    const std::string error = compile_error(model);
    CHECK_THAT(error, Contains("building layer dense@1"));
    CHECK_THAT(error, Contains("dense/kernel [2, 3]"));
    CHECK_THAT(error, Contains("[4, 3]"));
  }
  {
    SymbolicTensor x = Input({3});
    SharedLayer dense = Share(Named(Dense(3), "tower"));
    Model first(x, Apply(dense, x));
    SymbolicTensor z = Input({3});
    Model second(z, Apply(dense, z));
    CHECK(first.Compile(FrozenSgd()).ok());
    CHECK_THAT(compile_error(second), Contains("the shared layer tower (Dense) already belongs"));
  }
  {
    SymbolicTensor left = Input({3}), right = Input({3});
    auto frozen = BatchNormalization();
    frozen->set_trainable(false);  // Unfrozen later, it would learn from every call.
    SharedLayer norm = Share(std::move(frozen));
    Model model({left, right}, Apply(Concatenate(), {Apply(norm, left), Apply(norm, right)}));
    CHECK_THAT(compile_error(model), Contains("learns statistics of its batches"));
  }
  {
    SymbolicTensor left = Input({2, 3}), right = Input({2, 3});
    SharedLayer flat = Share(Dense(4, {.flatten_input = true}));
    Model model({left, right}, Apply(Concatenate(), {Apply(flat, left), Apply(flat, right)}));
    CHECK_THAT(compile_error(model, 12), Contains("its Keras config leaves out settings it has"));
  }
  {
    SymbolicTensor x = Input({3});
    SharedLayer add = Share(Add());
    Model model(x, Apply(add, x));
    CHECK_THAT(compile_error(model), Contains("a merge layer has no weights to share"));
  }
}

TEST_CASE("replicas of a siamese model with a shared embedding stay bit-identical on 2 workers",
          "[shared][distributed]") {
  // Two id sequences; the label says whether the first one's first id is the larger.
  Examples examples;
  examples.features = Tensor({512, 8});
  for (int i = 0; i < 512; ++i) {
    float* e = examples.features.data() + i * 8;
    for (int j = 0; j < 8; ++j) e[j] = static_cast<float>((i * 7 + j * 3 + i / 5) % 10);
    examples.labels.push_back(e[0] > e[4] ? 1 : 0);
  }
  const Dataset train = Dataset::FromExamples(std::move(examples));
  LocalCluster::Options options;
  options.num_workers = 2;
  std::vector<uint64_t> fingerprints(2);
  std::vector<double> first_losses(2), losses(2);
  auto results = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
    auto scope = w.strategy->scope();
    SymbolicTensor a = Input({4}), b = Input({4});
    SharedLayer embed = Share(Embedding(10, 4));
    SharedLayer tower = Share(Dense(8, {.activation = "relu"}));
    SymbolicTensor ea = Apply(tower, Apply(Flatten(), Apply(embed, a)));
    SymbolicTensor eb = Apply(tower, Apply(Flatten(), Apply(embed, b)));
    Model model({a, b}, Apply(Dense(2), Apply(Concatenate(), {ea, eb})));
    CompileOptions compile;
    compile.loss = {"sparse_categorical_crossentropy", true};
    compile.optimizer = {.name = "adam", .learning_rate = 0.01f};
    compile.intra_op_threads = 1;
    RW_RETURN_IF_ERROR(model.Compile(compile));
    FitOptions fit;
    fit.epochs = 6;
    fit.batch_size = 32;
    fit.verbose = 0;
    RW_ASSIGN_OR_RETURN(History history, model.Fit(train, fit));
    fingerprints[w.rank] = WeightsFingerprint(model);
    first_losses[w.rank] = history["loss"].front();
    losses[w.rank] = history["loss"].back();
    return absl::OkStatus();
  });
  for (int r = 0; r < 2; ++r) {
    INFO("worker " << r << ": " << results[r].message());
    REQUIRE(results[r].ok());
    CHECK(fingerprints[r] == fingerprints[0]);
    CHECK(losses[r] == losses[0]);
  }
  CHECK(losses[0] < 0.8 * first_losses[0]);  // It learns.
}

}  // namespace
}  // namespace ringwork
