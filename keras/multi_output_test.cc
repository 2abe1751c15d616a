// Models of several named inputs and outputs: each output learns its own targets
// with its own loss, the loss trained is their weighted sum (Keras' loss_weights),
// gradients match finite differences, logs name each output, two replicas train
// as one worker does, and a pipeline's features bind to inputs and outputs by name.
#include <catch2/catch.hpp>
#include <cmath>

#include "base/status_macros.h"
#include "keras/gradient_check_testing.h"
#include "testing/local_cluster.h"

namespace ringwork {
namespace {

using Catch::Matchers::Contains;

// x -> h; price = Dense(1)(h); kind = softmax(Dense(3)(h, price)): the price
// output is also read by the layer that makes the other output.
Model TwoOutputs() {
  SymbolicTensor x = Input({4}, "x");
  SymbolicTensor h = Apply(Dense(6, {.activation = "tanh"}), x);
  SymbolicTensor price = Apply(Named(Dense(1), "price"), h);
  SymbolicTensor kind =
      Apply(Named(Dense(3, {.activation = "softmax"}), "kind"), Apply(Concatenate(), {h, price}));
  return Model({x}, {price, kind});
}

CompileOptions TwoLosses(float learning_rate) {
  CompileOptions o;
  o.losses = {{"price", {"mse"}}, {"kind", {"sparse_categorical_crossentropy"}}};
  o.loss_weights = {{"price", 0.5f}, {"kind", 2.f}};
  o.metrics = {"accuracy"};  // Not by default: one output's loss measures numbers.
  o.optimizer = {.name = "sgd", .learning_rate = learning_rate};
  o.intra_op_threads = 1;
  return o;
}

constexpr int64_t kExamples = 24;

TypedTensor Floats(Shape shape, float scale, float phase) {
  TypedTensor t(ValueType::kFloat32, std::move(shape));
  for (int64_t i = 0; i < t.size(); ++i) {
    t.data<float>()[i] = std::sin(scale * static_cast<float>(i) + phase);
  }
  return t;
}

TypedTensor Kinds() {
  TypedTensor t(ValueType::kInt64, {kExamples});
  for (int64_t i = 0; i < kExamples; ++i) t.data<int64_t>()[i] = (i * 7) % 3;
  return t;
}

Pipeline TwoOutputData() {
  TypedTensor weight(ValueType::kFloat32, {kExamples});
  for (int64_t i = 0; i < kExamples; ++i) weight.data<float>()[i] = 0.5f + 0.1f * (i % 4);
  return *TensorSlicesPipeline({{"kind", Kinds()},
                                {"x", Floats({kExamples, 4}, 0.7f, 0.f)},
                                {"w", weight},
                                {"price", Floats({kExamples, 1}, 1.3f, 0.4f)}});
}

TEST_CASE("two outputs with loss weights: gradients match finite differences", "[multi_output]") {
  Model model = TwoOutputs();
  REQUIRE(model.Compile(TwoLosses(1e-30f)).ok());
  Batch batch;
  batch.features = Tensor({5, 4});
  batch.targets = Tensor({5, 1});
  for (int64_t i = 0; i < 20; ++i) batch.features[i] = std::sin(0.9f * static_cast<float>(i));
  for (int64_t i = 0; i < 5; ++i) batch.targets[i] = std::cos(1.1f * static_cast<float>(i));
  batch.more_targets.push_back({{0, 2, 1, 2, 0}, Tensor()});
  batch.weights = {1.f, 0.5f, 2.f, 1.f, 0.f};
  CheckGradientsByFiniteDifferences(model, batch, /*stride=*/1);
  CHECK(model.output_names() == std::vector<std::string>{"price", "kind"});
}

TEST_CASE("the loss is each output's loss times its weight, and logs name each output",
          "[multi_output]") {
  Model model = TwoOutputs();
  REQUIRE(model.Compile(TwoLosses(0.05f)).ok());
  const Pipeline data = TwoOutputData();
  // Inputs and targets bind by the names of the Input and of the output layers.
  absl::StatusOr<History> history = model.Fit(data, {.epochs = 2, .batch_size = 8, .verbose = 0});
  REQUIRE(history.ok());
  for (const char* key : {"loss", "price_loss", "kind_loss", "price_accuracy", "kind_accuracy"}) {
    INFO(key);
    CHECK(history->history().count(key) == 1);
  }
  absl::StatusOr<EvaluateResult> result = model.Evaluate(data, {.sample_weight = "w"});
  REQUIRE(result.ok());
  // By hand from the predictions: Keras' weighted means (SUM_OVER_BATCH_SIZE).
  absl::StatusOr<std::vector<Tensor>> predicted = model.PredictOutputs(data);
  REQUIRE(predicted.ok());
  REQUIRE(predicted->size() == 2);
  REQUIRE((*predicted)[0].shape() == Shape{kExamples, 1});
  REQUIRE((*predicted)[1].shape() == Shape{kExamples, 3});
  const TypedTensor price = Floats({kExamples, 1}, 1.3f, 0.4f), kinds = Kinds();
  double squared = 0, crossentropy = 0;
  for (int64_t i = 0; i < kExamples; ++i) {
    const double w = 0.5 + 0.1 * (i % 4);
    const double d = (*predicted)[0][i] - price.data<float>()[i];
    squared += w * d * d;
    const float* p = (*predicted)[1].data() + i * 3;
    CHECK(p[0] + p[1] + p[2] == Approx(1.f));  // The fused softmax runs in predict.
    crossentropy -= w * std::log(p[kinds.data<int64_t>()[i]]);
  }
  CHECK(result->metrics.at("price_loss") == Approx(squared / kExamples).epsilon(1e-5));
  CHECK(result->metrics.at("kind_loss") == Approx(crossentropy / kExamples).epsilon(1e-5));
  CHECK(result->loss ==
        Approx(0.5 * squared / kExamples + 2 * crossentropy / kExamples).epsilon(1e-5));
  CHECK(result->examples == kExamples);
}

// Weights after 2 epochs of a two-output model with sample weights on `workers`.
std::vector<std::vector<float>> TrainTwoOutputs(int workers) {
  std::vector<std::vector<float>> weights(static_cast<size_t>(workers));
  LocalCluster::Options options;
  options.num_workers = workers;
  const std::vector<absl::Status> results =
      LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
        auto scope = w.strategy->scope();
        Model model = TwoOutputs();
        RW_RETURN_IF_ERROR(model.Compile(TwoLosses(0.1f)));
        FitOptions fit;
        fit.epochs = 2;
        fit.batch_size = 8;
        fit.verbose = 0;
        fit.binding.sample_weight = "w";
        RW_RETURN_IF_ERROR(model.Fit(TwoOutputData(), fit).status());
        for (const Variable* v : model.weights()) {
          weights[static_cast<size_t>(w.rank)].insert(weights[static_cast<size_t>(w.rank)].end(),
                                                      v->value.data(), v->value.data() + v->size());
        }
        return absl::OkStatus();
      });
  for (const absl::Status& s : results) REQUIRE(s.ok());
  return weights;
}

TEST_CASE("two replicas train a two-output model as one worker does on the global batch",
          "[multi_output]") {
  const std::vector<std::vector<float>> one = TrainTwoOutputs(1), two = TrainTwoOutputs(2);
  CHECK(two[0] == two[1]);  // Replicas stay bit-identical.
  REQUIRE(one[0].size() == two[0].size());
  for (size_t i = 0; i < one[0].size(); ++i) {
    INFO("weight " << i);
    CHECK(two[0][i] == Approx(one[0][i]).margin(1e-5));
  }
}

TEST_CASE("a pipeline's features bind to a model's inputs by name, in any order",
          "[multi_output]") {
  SymbolicTensor ids = Input({2}, "ids"), numbers = Input({3}, "numbers");
  SymbolicTensor y = Apply(Dense(1), Apply(Concatenate(), {ids, numbers}));
  Model model({ids, numbers}, y);
  CompileOptions compile;
  compile.loss = {"mse"};
  compile.metrics = {};
  compile.intra_op_threads = 1;
  REQUIRE(model.Compile(compile).ok());
  const TypedTensor id_values = Floats({6, 2}, 0.3f, 0.f),
                    number_values = Floats({6, 3}, 0.5f, 1.f);
  const Pipeline data = *TensorSlicesPipeline(
      {{"numbers", number_values}, {"y", Floats({6}, 0.2f, 0.f)}, {"ids", id_values}});
  // The target is the one feature left.
  REQUIRE(model.Fit(data, {.epochs = 1, .batch_size = 3, .verbose = 0}).ok());
  absl::StatusOr<Tensor> by_name = model.Predict(data);
  REQUIRE(by_name.ok());
  // The same examples flat, in the model's order of inputs.
  Tensor flat({6, 5});
  for (int64_t i = 0; i < 6; ++i) {
    for (int64_t j = 0; j < 2; ++j) flat[i * 5 + j] = id_values.data<float>()[i * 2 + j];
    for (int64_t j = 0; j < 3; ++j) flat[i * 5 + 2 + j] = number_values.data<float>()[i * 3 + j];
  }
  absl::StatusOr<Tensor> by_position = model.Predict(flat);
  REQUIRE(by_position.ok());
  for (int64_t i = 0; i < 6; ++i) CHECK((*by_name)[i] == (*by_position)[i]);
  // Batched already: the inputs bind by one element's spec.
  absl::StatusOr<Tensor> batched = model.Predict(data.Batch(4));
  REQUIRE(batched.ok());
  for (int64_t i = 0; i < 6; ++i) CHECK((*batched)[i] == (*by_position)[i]);
  // A feature of another size than its input's.
  const Pipeline wrong = *TensorSlicesPipeline(
      {{"numbers", id_values}, {"y", Floats({6}, 0.2f, 0.f)}, {"ids", number_values}});
  absl::StatusOr<EvaluateResult> refused = model.Evaluate(wrong);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(std::string(refused.status().message()),
             Contains("input \"ids\" takes examples of shape [2]") &&
                 Contains("feature \"ids\" has shape [3]"));
}

TEST_CASE("an unnamed input takes the one feature the outputs and the weight leave",
          "[multi_output]") {
  SymbolicTensor x = Input({4});
  SymbolicTensor h = Apply(Dense(3, {.activation = "tanh"}), x);
  Model model({x}, {Apply(Named(Dense(1), "price"), h), Apply(Named(Dense(3), "kind"), h)});
  CompileOptions compile = TwoLosses(0.1f);
  compile.losses["kind"].from_logits = true;
  REQUIRE(model.Compile(compile).ok());
  FitOptions fit{.epochs = 1, .batch_size = 8, .verbose = 0};
  fit.binding.sample_weight = "w";
  CHECK(model.Fit(TwoOutputData(), fit).ok());
}

TEST_CASE("layer names are unique: automatic names skip given ones, repeated ones are refused",
          "[multi_output]") {
  SymbolicTensor x = Input({4});
  SymbolicTensor a = Apply(Named(Dense(2), "dense_1"), x);
  SymbolicTensor b = Apply(Dense(2), a);
  SymbolicTensor c = Apply(Dense(2), b);
  Model model({x}, {c});
  REQUIRE_FALSE(model.Compile(TwoLosses(0.1f)).ok());  // No outputs named price, kind.
  CompileOptions plain;
  plain.loss = {"mse"};
  REQUIRE(model.Compile(plain).ok());
  CHECK_THAT(model.Summary(), Contains("dense_1 (Dense)") && Contains("dense (Dense)") &&
                                  Contains("dense_2 (Dense)"));
  SymbolicTensor y = Input({4});
  Model twice({y}, {Apply(Named(Dense(1), "out"), y), Apply(Named(Dense(1), "out"), y)});
  absl::Status refused = twice.Compile(plain);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(std::string(refused.message()), Contains("two layers are named \"out\""));
}

TEST_CASE("compiled again after build with another loss, an output's softmax leaves the loss",
          "[multi_output]") {
  Model model = TwoOutputs();
  REQUIRE(model.Compile(TwoLosses(0.1f)).ok());  // kind's softmax goes into its loss.
  REQUIRE(model.Build({4}).ok());
  CompileOptions squared = TwoLosses(0.1f);
  squared.losses["kind"] = {"mse"};
  REQUIRE(model.Compile(squared).ok());
  absl::StatusOr<std::vector<Tensor>> predicted =
      model.PredictOutputs(Tensor({3, 4}, std::vector<float>(12, 0.5f)));
  REQUIRE(predicted.ok());
  for (int64_t i = 0; i < 3; ++i) {
    const float* p = (*predicted)[1].data() + i * 3;
    CHECK(p[0] + p[1] + p[2] == Approx(1.f));  // Probabilities, from the layer itself.
  }
}

TEST_CASE("several outputs: what cannot be trained is refused, naming it", "[multi_output]") {
  Model model = TwoOutputs();
  CompileOptions compile = TwoLosses(0.1f);
  compile.loss_weights["cost"] = 1.f;
  absl::Status unknown = model.Compile(compile);
  REQUIRE_FALSE(unknown.ok());
  CHECK_THAT(std::string(unknown.message()),
             Contains("loss_weights names \"cost\"") && Contains("(price, kind)"));
  REQUIRE(model.Compile(TwoLosses(0.1f)).ok());
  // A dataset without the second output's targets.
  const Pipeline no_kind = *TensorSlicesPipeline(
      {{"x", Floats({kExamples, 4}, 0.7f, 0.f)}, {"price", Floats({kExamples, 1}, 1.3f, 0.4f)}});
  absl::StatusOr<History> missing = model.Fit(no_kind, {.verbose = 0});
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(std::string(missing.status().message()), Contains("no feature \"kind\""));
  // Keras refuses class_weight for several outputs too.
  absl::StatusOr<History> classes =
      model.Fit(TwoOutputData(), {.class_weight = {{1, 2.f}}, .verbose = 0});
  REQUIRE_FALSE(classes.ok());
  CHECK_THAT(std::string(classes.status().message()), Contains("class_weight"));
  // In-memory examples hold one target each.
  Examples examples;
  examples.features = Tensor({4, 4});
  examples.labels = {0, 1, 2, 0};
  absl::StatusOr<History> in_memory =
      model.Fit(Dataset::FromExamples(std::move(examples)), {.batch_size = 4, .verbose = 0});
  REQUIRE_FALSE(in_memory.ok());
  CHECK_THAT(std::string(in_memory.status().message()),
             Contains("2 outputs (price, kind)") && Contains("targets for 1"));
  absl::StatusOr<Tensor> one = model.Predict(Tensor({2, 4}));
  REQUIRE_FALSE(one.ok());
  CHECK_THAT(std::string(one.status().message()), Contains("PredictOutputs"));
}

}  // namespace
}  // namespace ringwork
