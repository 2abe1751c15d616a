// Keras' trainable=false: a frozen layer's variables are neither updated nor
// all-reduced (2 workers), a frozen BatchNormalization normalizes with its
// moving statistics and keeps them, gradients flow through frozen layers as
// finite differences say, and Keras JSON freezes and exports the flag.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "base/status_macros.h"
#include "data/fashion_mnist.h"
#include "keras/gradient_check_testing.h"
#include "keras/keras_archive.h"
#include "keras/keras_import.h"
#include "keras/layers.h"
#include "keras/node_reference_testing.h"
#include "testing/local_cluster.h"

namespace ringwork {
namespace {

// Flatten, a frozen Dense, a frozen BatchNormalization, a trainable Dense.
std::unique_ptr<Sequential> FrozenBase() {
  auto model = std::make_unique<Sequential>();
  model->Add(Flatten());
  auto base = Dense(16, {.activation = "relu"});
  base->set_trainable(false);
  model->Add(std::move(base));
  auto bn = BatchNormalization();
  bn->set_trainable(false);
  model->Add(std::move(bn));
  model->Add(Dense(10));
  return model;
}

std::vector<std::vector<float>> Values(const std::vector<Variable*>& vars) {
  std::vector<std::vector<float>> out;
  for (const Variable* v : vars) out.emplace_back(v->value.data(), v->value.data() + v->size());
  return out;
}

TEST_CASE("frozen layers are neither updated nor all-reduced, on 2 workers", "[freezing]") {
  const Dataset train = Dataset::FromExamples(SyntheticImages(256, 0, 5).train);
  LocalCluster::Options options;
  options.num_workers = 2;
  std::vector<std::vector<std::vector<float>>> frozen_before(2), frozen_after(2), trained(2);
  auto results = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
    auto scope = w.strategy->scope();
    std::unique_ptr<Sequential> model = FrozenBase();
    CompileOptions compile = AdamOneThread();
    compile.loss = {"sparse_categorical_crossentropy", true};
    RW_RETURN_IF_ERROR(model->Compile(compile));
    RW_RETURN_IF_ERROR(model->Build({28, 28, 1}));
    // Only the last Dense is trained: the gradient arena holds its two variables.
    if (model->trainable_variables().size() != 2)
      return absl::InternalError("frozen variables trained");
    std::vector<Variable*> frozen;
    for (Variable* v : model->weights()) {
      if (v->name.rfind("dense_1/", 0) != 0) frozen.push_back(v);
    }
    frozen_before[w.rank] = Values(frozen);
    const std::vector<std::vector<float>> last_before = Values(model->trainable_variables());
    RW_RETURN_IF_ERROR(model->Fit(train, {.epochs = 2, .batch_size = 64, .verbose = 0}).status());
    frozen_after[w.rank] = Values(frozen);
    trained[w.rank] = Values(model->trainable_variables());
    if (trained[w.rank] == last_before) return absl::InternalError("nothing trained");
    if (model->Summary().find("Trainable params: 170") == std::string::npos) {
      return absl::InternalError(model->Summary());
    }
    return absl::OkStatus();
  });
  for (const absl::Status& r : results) {
    INFO(r.message());
    REQUIRE(r.ok());
  }
  CHECK(frozen_after[0] == frozen_before[0]);  // Kernel, bias, gamma, beta, moving statistics.
  CHECK(frozen_after[1] == frozen_before[1]);
  CHECK(trained[0] == trained[1]);  // Replicas stay bit-identical.
}

TEST_CASE("gradients flow through a frozen BatchNormalization as finite differences say",
          "[freezing]") {
  Sequential model;
  model.Add(Dense(6, {.activation = "tanh"}));
  auto bn = BatchNormalization();
  bn->set_trainable(false);
  model.Add(std::move(bn));
  model.Add(Dense(3));
  CompileOptions compile;
  compile.loss = {"sparse_categorical_crossentropy", true};
  compile.optimizer = {.name = "sgd", .learning_rate = 1e-30f};
  compile.intra_op_threads = 1;
  REQUIRE(model.Compile(compile).ok());
  REQUIRE(model.Build({5}).ok());
  // Moving statistics that are not the identity, so the frozen layer scales.
  for (Variable* v : model.weights()) {
    if (v->name == "batch_normalization/moving_variance") {
      for (int64_t i = 0; i < v->size(); ++i) v->value[i] = 0.25f + 0.5f * i;
    }
    if (v->name == "batch_normalization/moving_mean") v->value[1] = 0.3f;
  }
  Batch batch;
  batch.features = DeterministicInputs({8, 5});
  for (int i = 0; i < 8; ++i) batch.labels.push_back(i % 3);
  CheckGradientsByFiniteDifferences(model, batch, 1);
}

TEST_CASE("freezing and unfreezing a built model take effect when it compiles again",
          "[freezing]") {
  Sequential model;
  auto first = Dense(6, {.activation = "relu"});
  Layer* base = first.get();
  model.Add(std::move(first));
  model.Add(Dense(3));
  CompileOptions compile = AdamOneThread();
  compile.loss = {"sparse_categorical_crossentropy", true};
  REQUIRE(model.Compile(compile).ok());
  REQUIRE(model.Build({4}).ok());  // As LoadModel leaves a model.
  Batch batch;
  batch.features = DeterministicInputs({6, 4});
  for (int i = 0; i < 6; ++i) batch.labels.push_back(i % 3);
  base->set_trainable(false);
  REQUIRE(model.Compile(compile).ok());
  CHECK(model.trainable_variables().size() == 2);
  const std::vector<std::vector<float>> frozen = Values(base->weights());
  for (int step = 0; step < 3; ++step) REQUIRE(model.TrainStep(batch).ok());
  CHECK(Values(base->weights()) == frozen);
  base->set_trainable(true);
  REQUIRE(model.Compile(compile).ok());
  CHECK(model.trainable_variables().size() == 4);
  for (int step = 0; step < 3; ++step) REQUIRE(model.TrainStep(batch).ok());
  CHECK(Values(base->weights()) != frozen);
}

TEST_CASE("Keras JSON freezes a layer, and the exports keep it frozen", "[freezing]") {
  const std::string json = R"({"class_name": "Sequential", "config": {"layers": [
      {"class_name": "Dense", "config": {"units": 4, "batch_input_shape": [null, 3],
                                          "trainable": false}},
      {"class_name": "Dense", "config": {"units": 2}}]}})";
  absl::StatusOr<Model> model = ModelFromKerasJson(json);
  REQUIRE(model.ok());
  REQUIRE(model->Compile(AdamOneThread()).ok());
  REQUIRE(model->Build({3}).ok());
  CHECK(model->trainable_variables().size() == 2);
  CHECK(model->weights().size() == 4);
  absl::StatusOr<std::string> config = KerasConfigJson(*model);
  REQUIRE(config.ok());
  const nlohmann::json layers = nlohmann::json::parse(*config)["config"]["layers"];
  CHECK(layers[1]["config"]["trainable"] == false);
  CHECK(layers[2]["config"]["trainable"] == true);
}

}  // namespace
}  // namespace ringwork
