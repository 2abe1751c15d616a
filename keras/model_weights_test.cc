// Weights out and in: SaveWeights writes .npz and .safetensors that an
// independent reader (NumPy, keras/testdata/mlp_forward.py) turns into the same
// predictions; LoadWeights brings them back bit-identically on every replica and
// refuses a file of another model, naming the tensor and both shapes.
#include <catch2/catch.hpp>
#include <cmath>

#include "base/status_macros.h"
#include "checkpoint/weights_file.h"
#include "keras/sequential.h"
#include "keras/training_state.h"
#include "testing/local_cluster.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

using Catch::Matchers::Contains;

// Flatten -> Dense(16, relu) -> Dense(3, softmax) on 2x3 examples, `seed` initialised.
void BuildMlp(Sequential* model, uint64_t seed) {
  model->Add(Flatten());
  model->Add(Dense(16, {.activation = "relu"}));
  model->Add(Dense(3, {.activation = "softmax"}));
  CompileOptions compile;
  compile.optimizer = {.name = "adam", .learning_rate = 0.05f};
  compile.intra_op_threads = 1;
  compile.seed = seed;
  REQUIRE(model->Compile(compile).ok());
  REQUIRE(model->Build({2, 3}).ok());
}

Batch Examples() {
  Batch batch;
  batch.features = Tensor({10, 2, 3});
  for (int64_t i = 0; i < batch.features.size(); ++i) batch.features[i] = std::sin(0.37f * i);
  for (int64_t i = 0; i < 10; ++i) batch.labels.push_back(static_cast<int32_t>(i % 3));
  return batch;
}

TEST_CASE("weights saved as .npz and .safetensors predict alike in NumPy, and load back",
          "[weights]") {
  const std::string dir = FreshTestDir("model_weights");
  Sequential model;
  BuildMlp(&model, 1);
  const Batch batch = Examples();
  for (int step = 0; step < 5; ++step) REQUIRE(model.TrainStep(batch).ok());  // Not the init.
  absl::StatusOr<Tensor> ours = model.Predict(batch.features);
  REQUIRE(ours.ok());
  REQUIRE(WriteWeightsFile({{"x",
                             {10, 2, 3},
                             std::vector<float>(batch.features.data(),
                                                batch.features.data() + batch.features.size())}},
                           dir + "/x.npz")
              .ok());
  for (const std::string file : {"mlp.npz", "mlp.safetensors"}) {
    INFO(file);
    const std::string path = dir + "/" + file;
    REQUIRE(model.SaveWeights(path).ok());
    const SubprocessResult r = RunSubprocess(
        {"/usr/bin/python3", "keras/testdata/mlp_forward.py", path, dir + "/x.npz", dir + "/y.npz"},
        Subprocess::Options{});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Contains("dense/kernel [6, 16]") && Contains("dense_1/bias [3]"));
    absl::StatusOr<std::vector<NamedTensor>> numpy = ReadWeightsFile(dir + "/y.npz");
    REQUIRE(numpy.ok());
    REQUIRE((*numpy)[0].values.size() == 30);
    for (int64_t i = 0; i < 30; ++i)
      CHECK((*numpy)[0].values[i] == Approx((*ours)[i]).margin(1e-6));

    // Back into a model initialised otherwise: the same predictions, bit for bit.
    Sequential loaded;
    BuildMlp(&loaded, 99);
    REQUIRE(loaded.LoadWeights(path).ok());
    absl::StatusOr<Tensor> again = loaded.Predict(batch.features);
    REQUIRE(again.ok());
    for (int64_t i = 0; i < 30; ++i) CHECK((*again)[i] == (*ours)[i]);
  }
}

TEST_CASE("weights of another model are refused before anything changes, naming the tensor",
          "[weights]") {
  const std::string dir = FreshTestDir("model_weights_refused");
  Sequential model;
  BuildMlp(&model, 1);
  REQUIRE(model.SaveWeights(dir + "/mlp.safetensors").ok());
  Sequential wider;
  wider.Add(Flatten());
  wider.Add(Dense(17, {.activation = "relu"}));
  wider.Add(Dense(3, {.activation = "softmax"}));
  CompileOptions compile;
  compile.intra_op_threads = 1;
  REQUIRE(wider.Compile(compile).ok());
  REQUIRE(wider.Build({2, 3}).ok());
  const std::vector<float> before(wider.weights()[0]->value.data(),
                                  wider.weights()[0]->value.data() + 6 * 17);
  const absl::Status refused = wider.LoadWeights(dir + "/mlp.safetensors");
  REQUIRE(refused.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(refused.message()),
             Contains("tensor dense/kernel has shape [6, 16]; the model's has shape [6, 17]"));
  CHECK(std::vector<float>(wider.weights()[0]->value.data(),
                           wider.weights()[0]->value.data() + 6 * 17) == before);
  // A file that lacks one.
  absl::StatusOr<std::vector<NamedTensor>> tensors = ReadWeightsFile(dir + "/mlp.safetensors");
  REQUIRE(tensors.ok());
  tensors->pop_back();
  REQUIRE(WriteWeightsFile(*tensors, dir + "/three.npz").ok());
  CHECK_THAT(std::string(model.LoadWeights(dir + "/three.npz").message()),
             Contains("has no tensor dense_1/bias"));
  CHECK(model.SaveWeights(dir + "/mlp.h5").code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("in a cluster the chief saves and every replica loads the same weights", "[weights]") {
  const std::string dir = FreshTestDir("model_weights_cluster");
  std::vector<std::vector<float>> loaded(2);
  LocalCluster::Options options;
  options.num_workers = 2;
  const std::vector<absl::Status> results =
      LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
        auto scope = w.strategy->scope();
        Sequential model;
        BuildMlp(&model, 1);
        RW_RETURN_IF_ERROR(model.TrainStep(Examples()).status());
        RW_RETURN_IF_ERROR(model.SaveWeights(dir + "/mlp.npz"));
        Sequential other;
        BuildMlp(&other, static_cast<uint64_t>(7 + w.rank));  // Each its own start.
        RW_RETURN_IF_ERROR(other.LoadWeights(dir + "/mlp.npz"));
        for (const Variable* v : other.weights()) {
          loaded[static_cast<size_t>(w.rank)].insert(loaded[static_cast<size_t>(w.rank)].end(),
                                                     v->value.data(), v->value.data() + v->size());
        }
        return absl::OkStatus();
      });
  for (const absl::Status& s : results) REQUIRE(s.ok());
  CHECK(loaded[0] == loaded[1]);
  absl::StatusOr<std::vector<NamedTensor>> file = ReadWeightsFile(dir + "/mlp.npz");
  REQUIRE(file.ok());
  CHECK(std::vector<float>(loaded[0].begin(), loaded[0].begin() + 96) == (*file)[0].values);
}

// A checkpoint in `dir` of Dense(4) named d on 3 inputs, with a bias: zeros as
// initialised, or `bias` everywhere.
void CheckpointWithBias(float bias, const std::string& dir) {
  Sequential model;
  model.Add(Named(Dense(4), "d"));
  CompileOptions compile;
  compile.optimizer = {.name = "sgd", .learning_rate = 0.1f, .momentum = 0.9f};
  compile.intra_op_threads = 1;
  REQUIRE(model.Compile(compile).ok());
  REQUIRE(model.Build({3}).ok());
  for (Variable* v : model.weights()) {
    if (v->name == "d/bias") std::fill(v->value.data(), v->value.data() + v->size(), bias);
  }
  absl::StatusOr<std::unique_ptr<CheckpointDirectory>> opened =
      CheckpointDirectory::OpenForWriting(dir, 1);
  REQUIRE(opened.ok());
  REQUIRE(SaveTrainingState(model, opened->get(), TrainPosition{}, true).ok());
}

TEST_CASE("use_bias=false makes no bias variable; older checkpoints' zero biases still load",
          "[weights]") {
  Sequential dense;
  dense.Add(Named(Dense(4, {.use_bias = false}), "d"));
  REQUIRE(dense.Compile({}).ok());
  REQUIRE(dense.Build({3}).ok());
  REQUIRE(dense.weights().size() == 1);  // d/kernel, as in Keras.
  CHECK(dense.weights()[0]->name == "d/kernel");

  // A checkpoint written with a bias that stayed zero (as use_bias=false kept it)
  // loads; one whose bias is not zero is refused, naming it.
  const std::string zero = FreshTestDir("dropped_bias_zero");
  CheckpointWithBias(0.0f, zero);
  const absl::Status loaded = dense.LoadWeights(zero);
  INFO(loaded.message());
  CHECK(loaded.ok());
  const std::string learned = FreshTestDir("dropped_bias_learned");
  CheckpointWithBias(0.5f, learned);
  const absl::Status refused = dense.LoadWeights(learned);
  CHECK_FALSE(refused.ok());
  CHECK_THAT(std::string(refused.message()), Contains("d/bias"));
}

}  // namespace
}  // namespace ringwork
