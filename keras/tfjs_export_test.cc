// TF.js export checked by TensorFlow.js itself (@tensorflow/tfjs 4.22, the
// TensorFlow team's port of Keras' layers): it loads what ExportTfjs wrote and
// predicts what Model::Predict does, for the MLP, a CNN with batch and layer
// normalization and both pools, and a functional model with merges.
#include "keras/tfjs_export.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "keras/applications.h"
#include "keras/node_reference_testing.h"
#include "keras/saved_model.h"
#include "keras/sequential.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

using Catch::Matchers::Contains;

// Exports `model` to a fresh directory; TF.js predicts `x` as Predict does.
void CheckAgainstTfjs(Model& model, const Tensor& x, const std::string& name) {
  RequireNodePackage("@tensorflow/tfjs");
  const std::string dir = FreshTestDir(name);
  REQUIRE(ExportTfjs(model, dir + "/model").ok());
  std::ofstream(dir + "/x.f32", std::ios::binary)
      .write(reinterpret_cast<const char*>(x.data()), static_cast<std::streamsize>(x.size() * 4));
  std::string dims = "[";
  for (size_t i = 0; i < x.shape().size(); ++i) {
    dims += (i ? ", " : "") + std::to_string(x.shape()[i]);
  }
  const Subprocess::Options options = NodeOptions();
  const SubprocessResult r =
      RunSubprocess({"/usr/bin/node", "keras/testdata/tfjs_predict.js", dir + "/model",
                     dir + "/x.f32", dims + "]", dir + "/y.f32"},
                    options);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  RequireSameAsPredict(model, x, dir + "/y.f32", 1e-4);
}

TEST_CASE("train's MLP and CNN exported to TF.js predict there as here", "[tfjs]") {
  Model mlp = MlpClassifier(10);
  CompileOptions logits = AdamOneThread();
  logits.loss = {"sparse_categorical_crossentropy", true};
  REQUIRE(mlp.Compile(logits).ok());
  TrainFewSteps(mlp, DeterministicInputs({8, 28, 28, 1}), 10);
  CheckAgainstTfjs(mlp, DeterministicInputs({4, 28, 28, 1}), "tfjs_mlp");

  Model cnn = SmallCnn(10);
  REQUIRE(cnn.Compile(logits).ok());
  TrainFewSteps(cnn, DeterministicInputs({8, 28, 28, 1}), 10);
  CheckAgainstTfjs(cnn, DeterministicInputs({3, 28, 28, 1}), "tfjs_cnn");
}

TEST_CASE("normalization, pools, merges and a softmax export to TF.js", "[tfjs]") {
  SymbolicTensor x = Input({9, 9, 2});
  SymbolicTensor h = Apply(Conv2D(4, 3, {.padding = "same", .activation = "relu"}), x);
  h = Apply(MaxPool2D(2, {.padding = "same"}), Apply(BatchNormalization(), h));
  SymbolicTensor a = Apply(Conv2D(4, 1), h);
  h = Apply(Add(), {a, h});
  SymbolicTensor pooled = Apply(GlobalAveragePooling2D(), h);
  SymbolicTensor flat =
      Apply(LayerNormalization(), Apply(Flatten(), Apply(AveragePooling2D(2), h)));
  h = Apply(Concatenate(), {pooled, flat});
  Model model(x, Apply(Dense(3, {.activation = "softmax"}), Apply(Dropout(0.2f), h)));
  REQUIRE(model.Compile(AdamOneThread()).ok());
  TrainFewSteps(model, DeterministicInputs({12, 9, 9, 2}), 3);
  CheckAgainstTfjs(model, DeterministicInputs({5, 9, 9, 2}), "tfjs_functional");

  Model wide = WideAndDeep(20, 2, 3);
  CompileOptions binary = AdamOneThread();
  binary.loss = {"binary_crossentropy"};
  binary.metrics = {};
  REQUIRE(wide.Compile(binary).ok());
  REQUIRE(wide.Build({5}).ok());
  const absl::Status refused = ExportTfjs(wide, FreshTestDir("tfjs_wide") + "/model");
  REQUIRE(refused.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(refused.message()), Contains("(SliceLastAxis) is not exported"));
}

TEST_CASE("1D convolutions and pools, and global pools, export to TF.js", "[tfjs]") {
  SymbolicTensor x = Input({11, 3});
  SymbolicTensor h = Apply(Conv1D(4, 3, {.padding = "same", .activation = "relu"}), x);
  h = Apply(MaxPooling1D(2, {.padding = "same"}), h);
  h = Apply(Conv1D(6, 2, {.strides = 2, .use_bias = false}), h);
  SymbolicTensor a = Apply(GlobalMaxPooling1D(), Apply(AveragePooling1D(2, {.strides = 1}), h));
  SymbolicTensor b = Apply(GlobalAveragePooling1D(), h);
  SymbolicTensor c = Apply(GlobalMaxPooling2D(), Apply(Reshape({3, 2, 1}), Apply(Conv1D(2, 1), h)));
  Model model(x, Apply(Dense(3, {.activation = "softmax"}), Apply(Concatenate(), {a, b, c})));
  REQUIRE(model.Compile(AdamOneThread()).ok());
  TrainFewSteps(model, DeterministicInputs({12, 11, 3}), 3);
  CheckAgainstTfjs(model, DeterministicInputs({5, 11, 3}), "tfjs_sequence");
}

TEST_CASE("rectangular and dilated convolutions export to TF.js", "[tfjs]") {
  Sequential model;
  model.Add(Conv2D(4, {3, 2}, {.dilation_rate = {2, 3}, .padding = "same", .activation = "relu"}));
  model.Add(Conv2D(3, {1, 3}, {.strides = {2, 1}}));  // [5, 6, 3]
  model.Add(Reshape({30, 3}));
  model.Add(Conv1D(2, 3, {.dilation_rate = 4}));
  model.Add(Flatten());
  model.Add(Dense(3, {.activation = "softmax"}));
  REQUIRE(model.Compile(AdamOneThread()).ok());
  TrainFewSteps(model, DeterministicInputs({12, 9, 8, 2}), 3);
  CheckAgainstTfjs(model, DeterministicInputs({4, 9, 8, 2}), "tfjs_dilated");

  Sequential frames;  // TimeDistributed convolutions over frames, into a GRU.
  frames.Add(TimeDistributed(Conv2D(3, 3, {.activation = "relu"})));
  frames.Add(TimeDistributed(BatchNormalization()));
  frames.Add(TimeDistributed(Flatten()));
  frames.Add(GRU(3, {.reset_after = false}));
  frames.Add(Dense(3, {.activation = "softmax"}));
  REQUIRE(frames.Compile(AdamOneThread()).ok());
  TrainFewSteps(frames, DeterministicInputs({8, 4, 5, 5, 2}), 3);
  CheckAgainstTfjs(frames, DeterministicInputs({3, 4, 5, 5, 2}), "tfjs_time_distributed");
}

TEST_CASE("Embedding, LSTM and GRU export to TF.js", "[tfjs]") {
  Sequential model;
  model.Add(Embedding(12, 4));
  model.Add(LSTM(5, {.return_sequences = true}));
  model.Add(GRU(3, {.reset_after = false}));
  model.Add(Dense(3, {.activation = "softmax"}));
  REQUIRE(model.Compile(AdamOneThread()).ok());
  Tensor ids({8, 6});
  for (int64_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<float>((i * 7) % 12);
  TrainFewSteps(model, ids, 3);
  Tensor x({3, 6});
  for (int64_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 5 + 1) % 12);
  CheckAgainstTfjs(model, x, "tfjs_recurrent");

  // Masks: id 0 is padding (at the end, inside, everywhere), and Masking over
  // features; trained with them, then TF.js predicts with them.
  Sequential masked;
  masked.Add(Embedding(12, 4, {.mask_zero = true}));
  masked.Add(SimpleRNN(5, {.return_sequences = true}));
  masked.Add(Dense(4, {.activation = "tanh"}));
  masked.Add(LSTM(3));
  masked.Add(Dense(3, {.activation = "softmax"}));
  REQUIRE(masked.Compile(AdamOneThread()).ok());
  for (int64_t i = 0; i < ids.size(); ++i) ids[i] = (i % 6) > 3 - (i / 6) % 3 ? 0.f : ids[i];
  TrainFewSteps(masked, ids, 3);
  for (int64_t i = 0; i < 6; ++i) x[6 + i] = 0.f;  // The second example: padding only.
  x[1] = x[14] = 0.f;
  CheckAgainstTfjs(masked, x, "tfjs_masked");
  Sequential masking;
  masking.Add(Masking(0.5f));
  masking.Add(Bidirectional(GRU(3, {.return_sequences = true, .reset_after = false}), "ave"));
  masking.Add(Bidirectional(LSTM(2)));
  masking.Add(Dense(3, {.activation = "softmax"}));
  REQUIRE(masking.Compile(AdamOneThread()).ok());
  Tensor steps = DeterministicInputs({4, 5, 2});
  steps[2] = steps[3] = steps[14] = steps[15] = 0.5f;
  TrainFewSteps(masking, steps, 3);
  CheckAgainstTfjs(masking, steps, "tfjs_masking");

  Sequential keras_gru;  // reset_after=true, Keras' default: TF.js has no such GRU.
  keras_gru.Add(GRU(3));
  REQUIRE(keras_gru.Compile(AdamOneThread()).ok());
  REQUIRE(keras_gru.Build({4, 2}).ok());
  const absl::Status refused = ExportTfjs(keras_gru, FreshTestDir("tfjs_gru") + "/model");
  CHECK_THAT(std::string(refused.message()), Contains("GRU with reset_after=true"));
}

// Two id sequences through one Embedding, LSTM and Dense (each called twice), and
// a Dense called again on its own transformed output, which is the model's output.
TEST_CASE("shared layers export to TF.js, each once with its calls", "[tfjs][shared]") {
  SymbolicTensor left = Input({5}, "left"), right = Input({5}, "right");
  SharedLayer embed = Share(Embedding(12, 4));
  SharedLayer encoder = Share(LSTM(3));
  SharedLayer tower = Share(Dense(4, {.activation = "tanh"}));
  SymbolicTensor a = Apply(tower, Apply(encoder, Apply(embed, left)));
  SymbolicTensor b = Apply(tower, Apply(encoder, Apply(embed, right)));
  Model siamese(std::vector<SymbolicTensor>{left, right},
                Apply(Dense(2, {.activation = "softmax"}), Apply(Concatenate(), {a, b})));
  REQUIRE(siamese.Compile(AdamOneThread()).ok());
  Tensor ids({8, 10});
  for (int64_t e = 0; e < ids.size(); ++e) ids[e] = static_cast<float>((e * 7 + e / 3) % 12);
  TrainFewSteps(siamese, ids, 2);
  CheckAgainstTfjs(siamese, ids, "tfjs_shared_siamese");

  SymbolicTensor x = Input({4});
  SharedLayer again = Share(Dense(4, {.activation = "tanh"}));
  Model twice(x, Apply(again, Apply(Dense(4, {.activation = "relu"}), Apply(again, x))));
  CompileOptions logits = AdamOneThread();
  logits.loss = {"sparse_categorical_crossentropy", true};
  REQUIRE(twice.Compile(logits).ok());
  TrainFewSteps(twice, DeterministicInputs({8, 4}), 4);
  CheckAgainstTfjs(twice, DeterministicInputs({4, 4}), "tfjs_shared_twice");
}

TEST_CASE("a saved model loads without its C++ and predicts bit-identically", "[tfjs]") {
  SymbolicTensor x = Input({9, 9, 2});
  SymbolicTensor h = Apply(Conv2D(4, 3, {.padding = "same", .activation = "relu"}), x);
  h = Apply(BatchNormalization(), Apply(MaxPool2D(2), h));
  SymbolicTensor a = Apply(Dense(6, {.activation = "tanh"}), Apply(Flatten(), h));
  SymbolicTensor b = Apply(Dense(6), Apply(GlobalAveragePooling2D(), h));
  Model model(x, Apply(Dense(3, {.activation = "softmax"}), Apply(Add(), {a, b})));
  REQUIRE(model.Compile(AdamOneThread()).ok());
  TrainFewSteps(model, DeterministicInputs({12, 9, 9, 2}), 3);
  const std::string dir = FreshTestDir("saved_model") + "/model";
  REQUIRE(SaveModel(model, dir).ok());
  absl::StatusOr<Model> loaded = LoadModel(dir);
  REQUIRE(loaded.ok());
  const Tensor probe = DeterministicInputs({5, 9, 9, 2});
  absl::StatusOr<Tensor> before = model.Predict(probe), after = loaded->Predict(probe);
  REQUIRE(before.ok());
  REQUIRE(after.ok());
  REQUIRE(before->size() == after->size());
  for (int64_t i = 0; i < before->size(); ++i) CHECK((*after)[i] == (*before)[i]);
  CHECK(loaded->param_count() == model.param_count());
}

TEST_CASE("biases use_bias=false leaves out, and a Dense on an image, export to TF.js", "[tfjs]") {
  SymbolicTensor x = Input({6, 6, 2});
  SymbolicTensor h = Apply(Conv2D(3, 3, {.padding = "same", .use_bias = false}), x);
  h = Apply(AveragePooling2D(2, {.padding = "same"}), Apply(BatchNormalization(), h));
  Model model(x,
              Apply(Dense(4, {.activation = "softmax", .use_bias = false, .flatten_input = true}),
                    h));  // Reads [3, 3, 3] flat: a Flatten before it in TF.js.
  REQUIRE(model.Compile(AdamOneThread()).ok());
  TrainFewSteps(model, DeterministicInputs({6, 6, 6, 2}), 4);
  CheckAgainstTfjs(model, DeterministicInputs({3, 6, 6, 2}), "tfjs_no_bias");
}

}  // namespace
}  // namespace ringwork
