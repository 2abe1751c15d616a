// ONNX export checked by the programs that read it: onnx.checker (Debian's
// python3-onnx) accepts the file, and ONNX Runtime (npm onnxruntime-node, CPU)
// predicts what Model::Predict does, for an MLP (Flatten, Dense, Dropout, softmax)
// and a functional model with Add, Concatenate and a Dense on a rank-3 input.
#include "keras/onnx_export.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "keras/applications.h"
#include "keras/node_reference_testing.h"
#include "keras/sequential.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

using Catch::Matchers::Contains;

// Exports `model`, checks it with onnx.checker, runs `x` in ONNX Runtime and
// compares its output `output` with Predict's.
void CheckAgainstOnnxRuntime(Model& model, const Tensor& x, const std::string& output,
                             const std::string& dir) {
  const std::string path = dir + "/model.onnx";
  const absl::Status exported = ExportOnnx(model, path);
  INFO(exported.message());
  REQUIRE(exported.ok());
  const SubprocessResult checked =
      RunSubprocess({"/usr/bin/python3", "-c",
                     "import onnx, sys\nm = onnx.load(sys.argv[1])\n"
                     "onnx.checker.check_model(m, full_check=True)\n"
                     "print('ir', m.ir_version, 'opset', m.opset_import[0].version)",
                     path},
                    Subprocess::Options{});
  INFO(checked.output);
  REQUIRE(checked.exit_code == 0);
  CHECK_THAT(checked.output, Contains("ir 8 opset 17"));

  RequireNodePackage("onnxruntime-node");
  std::ofstream(dir + "/x.f32", std::ios::binary)
      .write(reinterpret_cast<const char*>(x.data()), static_cast<std::streamsize>(x.size() * 4));
  std::string dims = "[";
  for (size_t i = 0; i < x.shape().size(); ++i) {
    dims += (i ? ", " : "") + std::to_string(x.shape()[i]);
  }
  dims += "]";
  const Subprocess::Options options = NodeOptions();
  const SubprocessResult ran = RunSubprocess(
      {"/usr/bin/node", "keras/testdata/onnx_run.js", path, dir + "/x.f32", dims, dir + "/y"},
      options);
  INFO(ran.output);
  REQUIRE(ran.exit_code == 0);
  RequireSameAsPredict(model, x, dir + "/y." + output + ".f32", 1e-5);
}

// `model` over ids in [0, 15) of `steps` steps: trained a few steps, then ONNX
// Runtime predicts as it does.
void TrainAndCheckOnIds(Model& model, int64_t steps, const std::string& dir) {
  REQUIRE(model.Compile(AdamOneThread()).ok());
  Tensor train({12, steps});
  for (int64_t i = 0; i < train.size(); ++i) train[i] = static_cast<float>((i * 7) % 15);
  TrainFewSteps(model, train, 3);
  Tensor x({5, steps});
  for (int64_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 4 + 3) % 15);
  CheckAgainstOnnxRuntime(model, x, model.output_names()[0], FreshTestDir(dir));
}

TEST_CASE("an MLP exported to ONNX predicts in ONNX Runtime as in Ringwork", "[onnx]") {
  Sequential model;
  model.Add(Flatten());
  model.Add(Dense(32, {.activation = "relu"}));
  model.Add(Dropout(0.3f));
  model.Add(Dense(10, {.activation = "softmax"}));
  CompileOptions compile;
  compile.optimizer = {.name = "adam", .learning_rate = 0.01f};
  compile.intra_op_threads = 1;
  REQUIRE(model.Compile(compile).ok());
  Batch batch;
  batch.features = DeterministicInputs({16, 4, 4, 1});
  for (int i = 0; i < 16; ++i) batch.labels.push_back(i % 10);
  for (int step = 0; step < 3; ++step) REQUIRE(model.TrainStep(batch).ok());
  CheckAgainstOnnxRuntime(model, DeterministicInputs({7, 4, 4, 1}), "dense_1",
                          FreshTestDir("onnx_mlp"));
}

TEST_CASE("a Dense on a last axis exports as a batched MatMul, one that flattens with a Flatten",
          "[onnx]") {
  Sequential model;
  model.Add(Dense(6, {.activation = "relu"}));                            // [3, 4] -> [3, 6]
  model.Add(Dense(2, {.activation = "sigmoid", .flatten_input = true}));  // [18] -> [2]
  CompileOptions compile;
  compile.loss = {"binary_crossentropy"};
  compile.intra_op_threads = 1;
  REQUIRE(model.Compile(compile).ok());
  REQUIRE(model.Build({3, 4}).ok());
  CheckAgainstOnnxRuntime(model, DeterministicInputs({5, 3, 4}), "dense_1",
                          FreshTestDir("onnx_last_axis"));
}

TEST_CASE("a functional model with merges exports; a layer not exported yet is named", "[onnx]") {
  SymbolicTensor x = Input({3, 4});
  SymbolicTensor a = Apply(Dense(6, {.activation = "tanh", .flatten_input = true}), x);  // Flat.
  SymbolicTensor b = Apply(Dense(6, {.activation = "sigmoid", .flatten_input = true}), x);
  SymbolicTensor sum = Apply(Add(), {a, b});
  SymbolicTensor joined = Apply(Concatenate(), {a, sum});
  Model model(x, Apply(ActivationLayer("relu"), Apply(Dense(3, {.use_bias = false}), joined)));
  CompileOptions compile;
  compile.loss = {"mse"};
  compile.intra_op_threads = 1;
  REQUIRE(model.Compile(compile).ok());
  REQUIRE(model.Build({3, 4}).ok());
  CheckAgainstOnnxRuntime(model, DeterministicInputs({5, 3, 4}), "activation",
                          FreshTestDir("onnx_merge"));

  SymbolicTensor ids = Input({2}), numbers = Input({3});
  Model two(std::vector<SymbolicTensor>{ids, numbers},
            Apply(Dense(2), Apply(Concatenate(), {ids, numbers})));
  REQUIRE(two.Compile(compile).ok());
  REQUIRE(two.Build({5}).ok());
  const absl::Status refused = ExportOnnx(two, FreshTestDir("onnx_two_inputs") + "/two.onnx");
  REQUIRE(refused.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(refused.message()),
             Contains("(InputLayer) is not exported yet (a model of several inputs)"));
}

TEST_CASE("a CNN with batch normalization, both paddings, strides and both pools exports",
          "[onnx]") {
  SymbolicTensor x = Input({9, 9, 2});
  SymbolicTensor h = Apply(Conv2D(4, 3, {.padding = "same", .activation = "relu"}), x);
  h = Apply(MaxPool2D(2, {.padding = "same"}), Apply(BatchNormalization(), h));
  h = Apply(Conv2D(6, 3, {.strides = 2, .padding = "same"}), h);
  h = Apply(AveragePooling2D(2, {.strides = 1}), Apply(Conv2D(5, 2), h));
  h = Apply(LayerNormalization(), Apply(Flatten(), h));
  Model model(x, Apply(Dense(3, {.activation = "softmax"}), h));
  REQUIRE(model.Compile(AdamOneThread()).ok());
  TrainFewSteps(model, DeterministicInputs({12, 9, 9, 2}), 3);
  CheckAgainstOnnxRuntime(model, DeterministicInputs({5, 9, 9, 2}), "dense",
                          FreshTestDir("onnx_cnn"));
}

TEST_CASE("rectangular kernels and strides, and dilated convolutions, export", "[onnx]") {
  SymbolicTensor x = Input({9, 8, 2});
  SymbolicTensor h = Apply(
      Conv2D(4, {3, 2}, {.dilation_rate = {2, 3}, .padding = "same", .activation = "relu"}), x);
  h = Apply(Conv2D(3, {1, 3}, {.strides = {2, 1}}), h);  // [5, 6, 3]
  h = Apply(Conv1D(2, 3, {.dilation_rate = 4, .padding = "same"}), Apply(Reshape({30, 3}), h));
  Model model(x, Apply(Dense(3, {.activation = "softmax"}), Apply(Flatten(), h)));
  REQUIRE(model.Compile(AdamOneThread()).ok());
  TrainFewSteps(model, DeterministicInputs({12, 9, 8, 2}), 3);
  CheckAgainstOnnxRuntime(model, DeterministicInputs({5, 9, 8, 2}), "dense",
                          FreshTestDir("onnx_dilated"));
}

TEST_CASE("1D convolutions and pools, and global pools, export", "[onnx]") {
  SymbolicTensor x = Input({11, 3});
  SymbolicTensor h = Apply(Conv1D(4, 3, {.padding = "same", .activation = "relu"}), x);
  h = Apply(MaxPooling1D(2, {.padding = "same"}), h);             // [6, 4]
  h = Apply(Conv1D(6, 2, {.strides = 2, .use_bias = false}), h);  // [3, 6]
  SymbolicTensor a = Apply(GlobalMaxPooling1D(), Apply(AveragePooling1D(2, {.strides = 1}), h));
  SymbolicTensor b = Apply(GlobalAveragePooling1D(), h);
  SymbolicTensor image = Apply(Reshape({3, 2, 1}), Apply(Conv1D(2, 1), h));  // [3, 2] as an image
  SymbolicTensor c = Apply(GlobalMaxPooling2D(), image);
  Model model(x, Apply(Dense(3, {.activation = "softmax"}), Apply(Concatenate(), {a, b, c})));
  REQUIRE(model.Compile(AdamOneThread()).ok());
  TrainFewSteps(model, DeterministicInputs({12, 11, 3}), 3);
  CheckAgainstOnnxRuntime(model, DeterministicInputs({5, 11, 3}), "dense",
                          FreshTestDir("onnx_sequence"));
}

TEST_CASE("Embedding, SimpleRNN, LSTM and GRU (reset_after both ways) export as ONNX's ops",
          "[onnx]") {
  SymbolicTensor ids = Input({7});
  SymbolicTensor h = Apply(Embedding(15, 4), ids);
  h = Apply(LSTM(6, {.return_sequences = true}), h);
  SymbolicTensor a = Apply(GRU(5), h);
  SymbolicTensor b = Apply(GRU(3, {.reset_after = false}), h);
  SymbolicTensor c = Apply(GlobalMaxPooling1D(), Apply(GRU(2, {.return_sequences = true}), h));
  SymbolicTensor d = Apply(LSTM(3), h);
  SymbolicTensor e = Apply(SimpleRNN(4), Apply(SimpleRNN(3, {.return_sequences = true}), h));
  Model model(ids,
              Apply(Dense(3, {.activation = "softmax"}), Apply(Concatenate(), {a, b, c, d, e})));
  TrainAndCheckOnIds(model, 7, "onnx_recurrent");
}

TEST_CASE("shared layers export, each later call as a layer of its own", "[onnx][shared]") {
  SymbolicTensor ids = Input({10});
  SharedLayer encoder = Share(GRU(3));
  SharedLayer tower = Share(Dense(4, {.activation = "tanh"}));
  SymbolicTensor h = Apply(Embedding(15, 4), ids);
  SymbolicTensor a = Apply(tower, Apply(encoder, h));
  SymbolicTensor b = Apply(tower, Apply(encoder, Apply(Dense(4, {.activation = "tanh"}), h)));
  Model model(ids, Apply(Dense(3, {.activation = "softmax"}), Apply(Concatenate(), {a, b})));
  TrainAndCheckOnIds(model, 10, "onnx_shared");
}

TEST_CASE("a transformer (positions, attention as its parts, both fast and plain) exports",
          "[onnx]") {
  for (const int64_t features : {12, 32}) {  // Heads of 6 take the plain loops, of 16 the fast.
    INFO("features " << features);
    SymbolicTensor ids = Input({7});
    SymbolicTensor h = Apply(Embedding(15, features), ids);
    h = Apply(PositionEmbedding(9), h);
    h = TransformerEncoder(h, features, 2, 16);
    Model model(ids,
                Apply(Dense(3, {.activation = "softmax"}), Apply(GlobalAveragePooling1D(), h)));
    TrainAndCheckOnIds(model, 7, "onnx_transformer");
  }
}

TEST_CASE("Bidirectional layers export as one op of each direction, merged four ways", "[onnx]") {
  SymbolicTensor ids = Input({6});
  SymbolicTensor h = Apply(Embedding(15, 4), ids);
  h = Apply(Bidirectional(LSTM(3, {.return_sequences = true})), h);  // concat
  SymbolicTensor a = Apply(Bidirectional(GRU(3, {.reset_after = false}), "sum"), h);
  SymbolicTensor b = Apply(Bidirectional(SimpleRNN(2), "mul"), h);
  SymbolicTensor c = Apply(GlobalAveragePooling1D(),
                           Apply(Bidirectional(GRU(2, {.return_sequences = true}), "ave"), h));
  SymbolicTensor d = Apply(Bidirectional(LSTM(2)), h);
  SymbolicTensor e =
      Apply(GlobalMaxPooling1D(),
            Apply(Bidirectional(SimpleRNN(2, {.return_sequences = true}), "mul"), h));
  Model model(ids,
              Apply(Dense(3, {.activation = "softmax"}), Apply(Concatenate(), {a, b, c, d, e})));
  TrainAndCheckOnIds(model, 6, "onnx_bidirectional");
}

TEST_CASE("the built-in ResNet and Wide & Deep export", "[onnx]") {
  Model resnet = SmallResNet({8, 8, 1}, 4, {.random_flip = true});
  REQUIRE(resnet.Compile(AdamOneThread()).ok());
  TrainFewSteps(resnet, DeterministicInputs({8, 8, 8, 1}), 4);
  const std::string resnet_out = resnet.output_names()[0];
  CheckAgainstOnnxRuntime(resnet, DeterministicInputs({3, 8, 8, 1}), resnet_out,
                          FreshTestDir("onnx_resnet"));

  Model wide = WideAndDeep(/*num_ids=*/20, /*id_columns=*/2, /*numeric_columns=*/3);
  CompileOptions compile = AdamOneThread();
  compile.loss = {"binary_crossentropy"};
  compile.metrics = {};
  REQUIRE(wide.Compile(compile).ok());
  Tensor rows({6, 5});
  for (int64_t i = 0; i < 6; ++i) {
    rows[i * 5] = static_cast<float>((i * 7) % 20);  // Ids first, then numbers.
    rows[i * 5 + 1] = static_cast<float>((i * 3) % 20);
    for (int64_t j = 2; j < 5; ++j) rows[i * 5 + j] = std::sin(0.4f * (i * 5 + j));
  }
  TrainFewSteps(wide, rows, 2);
  CheckAgainstOnnxRuntime(wide, rows, wide.output_names()[0], FreshTestDir("onnx_wide"));
}

}  // namespace
}  // namespace ringwork
