// Keras models in: held-out TF.js layers models (TensorFlow.js builds them with
// non-trivial weights and predicts; keras/testdata/tfjs_make_models.js) load with
// their weights and predict as TF.js does; Keras 3's config.json parses; what
// Ringwork cannot honour is refused naming the JSON path.
#include "keras/keras_import.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "checkpoint/weights_file.h"
#include "keras/node_reference_testing.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

using Catch::Matchers::Contains;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<float> Floats(const std::string& path) {
  const std::string bytes = ReadFile(path);
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

CompileOptions Plain(const std::string& loss) {
  CompileOptions compile;
  compile.loss = {loss};
  compile.metrics = {};
  compile.intra_op_threads = 1;
  return compile;
}

TEST_CASE("TF.js layers models load with their weights and predict as TF.js does",
          "[keras_import]") {
  RequireNodePackage("@tensorflow/tfjs");
  const std::string dir = FreshTestDir("tfjs_models");
  const Subprocess::Options options = NodeOptions();
  const SubprocessResult made =
      RunSubprocess({"/usr/bin/node", "keras/testdata/tfjs_make_models.js", dir}, options);
  INFO(made.output);
  REQUIRE(made.exit_code == 0);
  for (const auto& [name, loss] :
       {std::pair{"cnn", "sparse_categorical_crossentropy"}, std::pair{"regression", "mse"},
        std::pair{"sequence", "mse"}, std::pair{"global_pools", "mse"},
        std::pair{"recurrent", "sparse_categorical_crossentropy"},
        std::pair{"gru_sequences", "mse"}, std::pair{"simple_rnn", "mse"},
        std::pair{"masked_recurrent", "sparse_categorical_crossentropy"},
        std::pair{"masking", "mse"}, std::pair{"bidirectional", "mse"},
        std::pair{"bidirectional_merges", "mse"}, std::pair{"dilated", "mse"},
        std::pair{"time_distributed", "mse"}, std::pair{"time_distributed_masked", "mse"},
        std::pair{"shared_siamese", "mse"}, std::pair{"shared_twice", "mse"}}) {
    INFO(name);
    const std::string model_dir = dir + "/" + name;
    absl::StatusOr<Model> model = ModelFromKerasJson(ReadFile(model_dir + "/model.json"));
    REQUIRE(model.ok());
    REQUIRE(model->Compile(Plain(loss)).ok());
    // Several inputs: each example holds them side by side.
    int64_t width = 0;
    for (const Shape& shape : model->signature().input_shapes) width += NumElements(shape);
    const Shape input = model->signature().input_shapes.size() == 1
                            ? model->signature().input_shapes[0]
                            : Shape{width};
    REQUIRE(model->Build(input).ok());
    REQUIRE(model->LoadWeights(model_dir + "/model.json").ok());
    const std::vector<float> x = Floats(model_dir + "/x.f32"),
                             expected = Floats(model_dir + "/y.f32");
    Tensor batch(WithBatch(4, input), x);
    absl::StatusOr<Tensor> ours = model->Predict(batch);
    REQUIRE(ours.ok());
    REQUIRE(static_cast<size_t>(ours->size()) == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      INFO("value " << i);
      CHECK((*ours)[static_cast<int64_t>(i)] == Approx(expected[i]).margin(1e-4));
    }
  }
}

TEST_CASE("Keras 3's config.json: a Sequential and a Functional model of two branches",
          "[keras_import]") {
  const std::string sequential = R"({"module": "keras", "class_name": "Sequential", "config": {
    "name": "sequential", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null},
    "layers": [
      {"module": "keras.layers", "class_name": "InputLayer", "config": {"batch_shape": [null, 28, 28], "dtype": "float32", "sparse": false, "name": "input_layer"}, "registered_name": null},
      {"module": "keras.layers", "class_name": "Flatten", "config": {"name": "flatten", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}, "data_format": "channels_last"}, "registered_name": null, "build_config": {"input_shape": [null, 28, 28]}},
      {"module": "keras.layers", "class_name": "Dense", "config": {"name": "dense", "trainable": true, "dtype": "float32", "units": 128, "activation": "relu", "use_bias": true, "kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform", "config": {"seed": null}, "registered_name": null}, "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name": null}, "kernel_regularizer": null, "bias_regularizer": null, "kernel_constraint": null, "bias_constraint": null}, "registered_name": null},
      {"module": "keras.layers", "class_name": "Dropout", "config": {"name": "dropout", "trainable": true, "dtype": "float32", "rate": 0.2, "seed": null, "noise_shape": null}, "registered_name": null},
      {"module": "keras.layers", "class_name": "Dense", "config": {"name": "dense_1", "trainable": true, "dtype": "float32", "units": 10, "activation": "softmax", "use_bias": true, "kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform", "config": {"seed": null}, "registered_name": null}, "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name": null}, "kernel_regularizer": null, "bias_regularizer": null, "kernel_constraint": null, "bias_constraint": null}, "registered_name": null}],
    "build_input_shape": [null, 28, 28]}, "registered_name": null})";
  absl::StatusOr<Model> s = ModelFromKerasJson(sequential);
  REQUIRE(s.ok());
  REQUIRE(s->Compile(Plain("sparse_categorical_crossentropy")).ok());
  REQUIRE(s->Build({28, 28}).ok());
  CHECK(s->param_count() == 784 * 128 + 128 + 1290);
  CHECK_THAT(s->Summary(), Contains("dense_1 (Dense)") && Contains("dropout (Dropout)"));

  const std::string functional =
      R"({"module": "keras.src.models.functional", "class_name": "Functional", "config": {
    "name": "two_branches", "trainable": true,
    "layers": [
      {"module": "keras.layers", "class_name": "InputLayer", "config": {"batch_shape": [null, 784], "dtype": "float32", "sparse": false, "name": "pixels"}, "registered_name": null, "name": "pixels", "inbound_nodes": []},
      {"module": "keras.layers", "class_name": "Dense", "config": {"name": "left", "units": 64, "activation": "relu"}, "registered_name": null, "name": "left",
       "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"shape": [null, 784], "dtype": "float32", "keras_history": ["pixels", 0, 0]}}], "kwargs": {}}]},
      {"module": "keras.layers", "class_name": "Dense", "config": {"name": "right", "units": 32, "activation": "tanh"}, "registered_name": null, "name": "right",
       "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"shape": [null, 784], "dtype": "float32", "keras_history": ["pixels", 0, 0]}}], "kwargs": {}}]},
      {"module": "keras.layers", "class_name": "Concatenate", "config": {"name": "joined", "axis": -1}, "registered_name": null, "name": "joined",
       "inbound_nodes": [{"args": [[{"class_name": "__keras_tensor__", "config": {"shape": [null, 64], "dtype": "float32", "keras_history": ["left", 0, 0]}},
                                    {"class_name": "__keras_tensor__", "config": {"shape": [null, 32], "dtype": "float32", "keras_history": ["right", 0, 0]}}]], "kwargs": {}}]},
      {"module": "keras.layers", "class_name": "Dense", "config": {"name": "classes", "units": 10, "activation": "softmax"}, "registered_name": null, "name": "classes",
       "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"shape": [null, 96], "dtype": "float32", "keras_history": ["joined", 0, 0]}}], "kwargs": {}}]}],
    "input_layers": [["pixels", 0, 0]], "output_layers": [["classes", 0, 0]]}, "registered_name": "Functional"})";
  absl::StatusOr<Model> f = ModelFromKerasJson(functional);
  REQUIRE(f.ok());
  REQUIRE(f->Compile(Plain("sparse_categorical_crossentropy")).ok());
  REQUIRE(f->Build({784}).ok());
  CHECK(f->param_count() == 784 * 64 + 64 + 784 * 32 + 32 + 96 * 10 + 10);
  CHECK(f->output_names() == std::vector<std::string>{"classes"});
  CHECK(f->signature().input_names == std::vector<std::string>{"pixels"});
}

TEST_CASE("a merge layer called twice becomes two layers, named as TF.js accepts",
          "[keras_import][shared]") {
  // tf.keras 2's form: add(add(a, b), a), the output being the Add's node 1.
  absl::StatusOr<Model> model = ModelFromKerasJson(R"({"class_name": "Functional", "config": {
      "layers": [
        {"class_name": "InputLayer", "name": "a", "config": {"batch_input_shape": [null, 2]},
         "inbound_nodes": []},
        {"class_name": "InputLayer", "name": "b", "config": {"batch_input_shape": [null, 2]},
         "inbound_nodes": []},
        {"class_name": "Add", "name": "add", "config": {},
         "inbound_nodes": [[["a", 0, 0, {}], ["b", 0, 0, {}]], [["add", 0, 0, {}], ["a", 0, 0, {}]]]}],
      "input_layers": [["a", 0, 0], ["b", 0, 0]], "output_layers": [["add", 1, 0]]}})");
  INFO(model.status().message());
  REQUIRE(model.ok());
  REQUIRE(model->Compile(Plain("mse")).ok());
  CHECK(model->output_names() == std::vector<std::string>{"add_1"});
  absl::StatusOr<Tensor> y = model->Predict(Tensor({1, 4}, {1, 2, 3, 4}));
  REQUIRE(y.ok());
  CHECK((*y)[0] == 5.f);  // (1 + 3) + 1
  CHECK((*y)[1] == 8.f);  // (2 + 4) + 2
  // A call of a layer that never comes is named.
  absl::StatusOr<Model> broken = ModelFromKerasJson(R"({"class_name": "Functional", "config": {
      "layers": [
        {"class_name": "InputLayer", "name": "a", "config": {"batch_input_shape": [null, 2]},
         "inbound_nodes": []},
        {"class_name": "Dense", "name": "d", "config": {"units": 2},
         "inbound_nodes": [[["a", 0, 0, {}]], [["d", 3, 0, {}]]]}],
      "input_layers": [["a", 0, 0]], "output_layers": [["d", 1, 0]]}})");
  CHECK_THAT(std::string(broken.status().message()),
             Contains("$.config.layers[1].inbound_nodes: reads call 3 of d, which no layer makes"));
}

TEST_CASE("what Ringwork cannot honour is refused, naming its JSON path", "[keras_import]") {
  const std::string head = R"({"class_name": "Sequential", "config": {"layers": [)";
  const std::string input =
      R"({"class_name": "Dense", "config": {"units": 4, "batch_input_shape": [null, 3]}},)";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"class_name": "Conv3D", "config": {"filters": 2}})",
       "$.config.layers[1]: layer class Conv3D is not supported"},
      {R"({"class_name": "TimeDistributed", "config": {"layer": {}}})",
       "$.config.layers[1].config.layer: needs {\"class_name\""},
      {R"({"class_name": "Bidirectional", "config": {"units": 4}})",
       "$.config.layers[1].config.layer: needs {\"class_name\""},
      {R"({"class_name": "LSTM", "config": {"units": 4, "recurrent_activation": "hard_sigmoid"}})",
       "$.config.layers[1].config.recurrent_activation: hard_sigmoid is not supported"},
      {R"({"class_name": "GRU", "config": {"units": 4, "return_state": true}})",
       "$.config.layers[1].config.return_state: true is not supported"},
      {R"({"class_name": "Dense", "config": {"units": 2, "kernel_regularizer": {"class_name": "OrthogonalRegularizer"}}})",
       "$.config.layers[1].config.kernel_regularizer: {\"class_name\":\"OrthogonalRegularizer\"} "
       "is not supported"},
      {R"({"class_name": "Dense", "config": {"units": 2, "trainable": "no"}})",
       "$.config.layers[1].config.trainable: \"no\" is not true or false"},
      {R"({"class_name": "Conv2D", "config": {"filters": 2, "kernel_size": [3, 1, 2]}})",
       "$.config.layers[1].config.kernel_size: [3,1,2]: not 2 whole numbers"},
      {R"({"class_name": "Dense", "config": {"units": 2, "activation": "selu"}})",
       "$.config.layers[1].config.activation: activation selu"},
  };
  for (const auto& [layer, message] : cases) {
    INFO(layer);
    absl::StatusOr<Model> m = ModelFromKerasJson(head + input + layer + "]}}");
    REQUIRE(m.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(m.status().message()), Contains(message));
  }
  CHECK_THAT(std::string(ModelFromKerasJson(R"({"class_name": "Custom"})").status().message()),
             Contains("$.class_name: \"Custom\" is not a Sequential or Functional model"));
}

TEST_CASE("malformed JSON and Keras semantics Ringwork lacks are refused, not crashed on",
          "[keras_import]") {
  for (
      const std::string& text :
      {std::string(R"({"modelTopology": 5})"),
       std::string(R"({"class_name": "Sequential", "config": {"layers": [1]}})"),
       std::string(R"({"class_name": "Functional", "config": []})"),
       std::string(
           R"({"class_name": "Functional", "config": {"layers": [{"class_name": "Dense", "name": "d", "config": {}, "inbound_nodes": [[5]]}]}})"),
       std::string(
           R"({"class_name": "Sequential", "config": {"layers": [{"class_name": "Dense", "config": {"units": 12.7, "batch_input_shape": [null, 3]}}]}})")}) {
    INFO(text);
    CHECK(ModelFromKerasJson(text).status().code() == absl::StatusCode::kInvalidArgument);
  }
  // Keras' Dense on [ids, 4] acts per id, and so does Ringwork's now.
  absl::StatusOr<Model> dense =
      ModelFromKerasJson(R"({"class_name": "Sequential", "config": {"layers": [
      {"class_name": "Embedding", "config": {"input_dim": 10, "output_dim": 4, "batch_input_shape": [null, 5]}},
      {"class_name": "Dense", "config": {"units": 2}}]}})");
  REQUIRE(dense.ok());
  REQUIRE(dense->Compile(Plain("mse")).ok());
  REQUIRE(dense->Build({5}).ok());
  absl::StatusOr<Tensor> per_id = dense->Predict(Tensor({1, 5}, {0, 1, 2, 3, 4}));
  REQUIRE(per_id.ok());
  CHECK(per_id->shape() == Shape{1, 5, 2});
  // Batch normalization over axis 1 of an image, not its channels.
  absl::StatusOr<Model> bn =
      ModelFromKerasJson(R"({"class_name": "Sequential", "config": {"layers": [
      {"class_name": "Conv2D", "config": {"filters": 2, "kernel_size": 3, "batch_input_shape": [null, 6, 6, 1]}},
      {"class_name": "BatchNormalization", "config": {"axis": 1}}]}})");
  REQUIRE(bn.ok());
  REQUIRE(bn->Compile(Plain("mse")).ok());
  CHECK_THAT(std::string(bn->Build({6, 6, 1}).message()), Contains("but axis is 1"));
}

TEST_CASE("a TF.js manifest's shards stay beside it and hold exactly its weights",
          "[keras_import]") {
  const std::string dir = FreshTestDir("tfjs_manifest");
  std::ofstream(dir + "/w.bin", std::ios::binary) << std::string(16, '\0');
  const auto manifest = [&](const std::string& shard, int floats) {
    std::ofstream(dir + "/model.json") << R"({"weightsManifest": [{"paths": [")" << shard
                                       << R"("], "weights": [{"name": "d/kernel", "shape": [)"
                                       << floats << R"(], "dtype": "float32"}]}]})";
    return ReadWeightsFile(dir + "/model.json").status();
  };
  CHECK(manifest("w.bin", 4).ok());
  CHECK_THAT(std::string(manifest("../w.bin", 4).message()), Contains("is not beside it"));
  CHECK_THAT(std::string(manifest("/etc/passwd", 4).message()), Contains("is not beside it"));
  CHECK_THAT(std::string(manifest("w.bin", 3).message()),
             Contains("its weights take 12 bytes; its shards hold 16"));
}

}  // namespace
}  // namespace ringwork
