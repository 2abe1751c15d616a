// The functional API: residual connections, fan-outs and merge layers train with
// gradients that match finite differences; a chain described functionally is a
// Sequential model; mistakes in the graph are refused naming the layer and the
// shapes; replicas of a residual model stay bit-identical.
#include "keras/functional.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "base/status_macros.h"
#include "data/fashion_mnist.h"
#include "keras/gradient_check_testing.h"
#include "keras/training_state.h"
#include "testing/local_cluster.h"

namespace ringwork {
namespace {

using Catch::Matchers::Contains;

CompileOptions FrozenSgd() {
  CompileOptions o;
  o.loss = {"sparse_categorical_crossentropy", true};
  o.optimizer = {.name = "sgd", .learning_rate = 1e-30f};  // Steps leave the weights as they are.
  o.intra_op_threads = 1;
  return o;
}

Batch ImageBatch() {
  Batch batch;
  batch.features = Tensor({4, 3, 3, 2});
  for (int64_t i = 0; i < batch.features.size(); ++i)
    batch.features[i] = std::sin(0.9f * static_cast<float>(i));
  batch.labels = {0, 2, 1, 2};
  return batch;
}

TEST_CASE("a residual block's gradients match finite differences", "[functional]") {
  SymbolicTensor x = Input({3, 3, 2});
  SymbolicTensor h = Apply(Conv2D(4, 3, {.padding = "same", .activation = "tanh"}), x);
  SymbolicTensor y = Apply(Conv2D(4, 3, {.padding = "same"}), h);  // h is read twice:
  y = Apply(Add(), {y, h});                                        // its gradient is a sum.
  y = Apply(ActivationLayer("tanh"), y);
  y = Apply(Dense(3), Apply(GlobalAveragePooling2D(), y));
  Model model(x, y);
  REQUIRE(model.Compile(FrozenSgd()).ok());
  CheckGradientsByFiniteDifferences(model, ImageBatch(), 2);
  const std::string summary = model.Summary();
  INFO(summary);
  CHECK_THAT(summary, Contains("Model: \"model\""));
  CHECK_THAT(summary, Contains("Connected to"));
  CHECK_THAT(summary, Contains("conv2d_1, conv2d"));  // What the Add reads.
}

TEST_CASE("Concatenate and Multiply of two branches: gradients match finite differences",
          "[functional]") {
  SymbolicTensor x = Input({3, 3, 2});
  SymbolicTensor flat = Apply(Flatten(), x);
  SymbolicTensor a = Apply(Dense(4, {.activation = "tanh"}), flat);
  SymbolicTensor b = Apply(Dense(4, {.activation = "tanh"}), flat);
  SymbolicTensor product = Apply(Multiply(), {a, b});
  SymbolicTensor joined = Apply(Concatenate(), {a, product, b});  // [12]
  SymbolicTensor out = Apply(Dense(3), Apply(LayerNormalization(), joined));
  Model model(x, out);
  REQUIRE(model.Compile(FrozenSgd()).ok());
  CheckGradientsByFiniteDifferences(model, ImageBatch(), 2);
}

TEST_CASE("a model of two inputs reads them from one flat example", "[functional]") {
  SymbolicTensor ids = Input({2});
  SymbolicTensor numbers = Input({3});
  SymbolicTensor embedded = Apply(Flatten(), Apply(Embedding(5, 2), ids));
  SymbolicTensor joined = Apply(Concatenate(), {embedded, numbers});
  Model model({ids, numbers}, Apply(Dense(3), Apply(Dense(4, {.activation = "tanh"}), joined)));
  REQUIRE(model.Compile(FrozenSgd()).ok());
  Batch batch;
  batch.features = Tensor(
      {4, 5}, {0, 3, 0.5f, -1, 2, 4, 4, 0.1f, 0.2f, 0.3f, 1, 2, -0.5f, 1, 0, 3, 0, 2, 2, -2});
  batch.labels = {0, 2, 1, 2};
  CheckGradientsByFiniteDifferences(model, batch, 1);
  const std::string summary = model.Summary();
  INFO(summary);
  CHECK_THAT(summary, Contains("input_layer (InputLayer)"));
  CHECK_THAT(summary, Contains("input_layer_1 (InputLayer)"));
  // The ids are the first two values of each example: a bad one is named.
  batch.features[1] = 9;
  CHECK_THAT(std::string(model.TrainStep(batch).status().message()),
             Contains("is not an id in [0, 5)"));
  // Examples of another width than the inputs together are refused.
  SymbolicTensor a = Input({2}), b = Input({2});
  Model other({a, b}, Apply(Dense(1), Apply(Add(), {a, b})));
  REQUIRE(other.Compile(FrozenSgd()).ok());
  CHECK_THAT(
      std::string(other.Build({5}).message()),
      Contains(
          "the model's inputs take examples of shape [4], but the data's examples have shape [5]"));
}

TEST_CASE("a chain described functionally trains as the same Sequential model", "[functional]") {
  auto train = [](Model& model) {
    CompileOptions o = FrozenSgd();
    o.optimizer = {.name = "adam"};
    REQUIRE(model.Compile(o).ok());
    for (int step = 0; step < 3; ++step) REQUIRE(model.TrainStep(ImageBatch()).ok());
    return WeightsFingerprint(model);
  };
  Sequential sequential;
  sequential.Add(Flatten());
  sequential.Add(Dense(5, {.activation = "relu"}));
  sequential.Add(Dense(3));
  SymbolicTensor x = Input({3, 3, 2});
  Model functional(x,
                   Apply(Dense(3), Apply(Dense(5, {.activation = "relu"}), Apply(Flatten(), x))));
  CHECK(train(functional) == train(sequential));
  CHECK(ModelFingerprint(functional) == ModelFingerprint(sequential));  // Same names, same shapes.
}

TEST_CASE("mistakes in a functional model are refused with the layer and the shapes",
          "[functional]") {
  {
    SymbolicTensor x = Input({3, 3, 2});
    SymbolicTensor a = Apply(Dense(4), Apply(Flatten(), x));
    SymbolicTensor b = Apply(Dense(5), Apply(Flatten(), x));
    Model model(x, Apply(Add(), {a, b}));
    REQUIRE(model.Compile(FrozenSgd()).ok());
    CHECK(std::string(model.Build({3, 3, 2}).message()) ==
          "building layer add for inputs [4] and [5]: add (Add) needs inputs of one shape, got [4] "
          "and [5]");
  }
  {
    SymbolicTensor x = Input({3, 3, 2});
    Model model(x, Apply(Dense(2), Apply(Flatten(), x)));
    REQUIRE(model.Compile(FrozenSgd()).ok());
    CHECK_THAT(std::string(model.Build({28, 28, 1}).message()),
               Contains("the model's inputs take examples of shape [3, 3, 2], but the data's "
                        "examples have shape [28, 28, 1]"));
  }
  {
    SymbolicTensor x = Input({4}), other = Input({4});
    Model model(x, Apply(Add(), {x, other}));
    CHECK_THAT(std::string(model.Compile(FrozenSgd()).message()),
               Contains("depend on an Input() that is not among its inputs"));
  }
  {
    // Scalars per example have no last axis to join (the rank is checked first).
    SymbolicTensor a = Input({}), b = Input({});
    Model model({a, b}, Apply(Concatenate(), {a, b}));
    REQUIRE(model.Compile(FrozenSgd()).ok());
    CHECK_THAT(std::string(model.Build({2}).message()),
               Contains("concatenate (Concatenate) joins the last axis, so every other dimension "
                        "must match; got [] and []"));
  }
  {
    SymbolicTensor a = Input({2, 3}), b = Input({3});
    Model model({a, b}, Apply(Concatenate(), {a, b}));
    REQUIRE(model.Compile(FrozenSgd()).ok());
    CHECK_THAT(std::string(model.Build({9}).message()), Contains("must match; got [2, 3] and [3]"));
  }
  {
    SymbolicTensor x = Input({4});
    Model model(x, Apply(Add(), {x}));
    CHECK_THAT(std::string(model.Compile(FrozenSgd()).message()),
               Contains("needs 2 or more tensors, got 1"));
  }
  {
    SymbolicTensor x = Input({4}), other = Input({4});
    Model model(x, Apply(Dense(2), other));
    CHECK_THAT(std::string(model.Compile(FrozenSgd()).message()),
               Contains("depend on an Input() that is not among its inputs"));
  }
  {
    SymbolicTensor x = Input({4});
    SymbolicTensor y = Apply(Dense(2), x);
    Model first(x, y);
    Model second(x, y);
    CHECK_THAT(std::string(second.Compile(FrozenSgd()).message()),
               Contains("already belong to another Model"));
  }
}

TEST_CASE("replicas of a residual model stay bit-identical, with and without the overlap thread",
          "[functional][distributed]") {
  const Dataset train = Dataset::FromExamples(SyntheticImages(768, 0, 5).train);
  for (int inter_op : {1, 2}) {
    INFO("inter_op_threads " << inter_op);
    LocalCluster::Options options;
    options.num_workers = 2;
    options.strategy.inter_op_threads = inter_op;
    options.strategy.communication.bytes_per_pack =
        4 << 10;  // Several packs (in one all-reduce without overlap).
    std::vector<uint64_t> fingerprints(2);
    std::vector<double> losses(2), first_losses(2);
    auto results = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
      auto scope = w.strategy->scope();
      SymbolicTensor x = Input({28, 28, 1});
      SymbolicTensor h =
          Apply(Conv2D(4, 3, {.strides = 2, .padding = "same", .activation = "relu"}), x);
      SymbolicTensor y = Apply(BatchNormalization(), Apply(Conv2D(4, 3, {.padding = "same"}), h));
      y = Apply(ActivationLayer("relu"), Apply(Add(), {y, h}));
      y = Apply(Dense(10), Apply(GlobalAveragePooling2D(), y));
      Model model(x, y);
      CompileOptions compile;
      compile.loss = {"sparse_categorical_crossentropy", true};
      compile.intra_op_threads = 1;
      RW_RETURN_IF_ERROR(model.Compile(compile));
      FitOptions fit;
      fit.epochs = 3;
      fit.batch_size = 64;
      fit.verbose = 0;
      RW_ASSIGN_OR_RETURN(History history, model.Fit(train, fit));
      fingerprints[w.rank] = WeightsFingerprint(model);
      losses[w.rank] = history["loss"].back();
      first_losses[w.rank] = history["loss"].front();
      return absl::OkStatus();
    });
    for (int r = 0; r < 2; ++r) {
      INFO("worker " << r << ": " << results[r].message());
      REQUIRE(results[r].ok());
      CHECK(fingerprints[r] == fingerprints[0]);
      CHECK(losses[r] == losses[0]);
    }
    CHECK(losses[0] < first_losses[0]);  // It learns.
  }
}

}  // namespace
}  // namespace ringwork
