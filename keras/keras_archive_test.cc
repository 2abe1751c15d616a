// Keras 3's files: a .keras archive and a .weights.h5 read by Python's zipfile
// and h5py (python3-h5py) in Keras 3's layout, against NumPy's reading of the
// same weights; loading them back predicts bit-identically; damaged, crafted
// or mismatched files are refused naming what is wrong.
#include "keras/keras_archive.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "checkpoint/h5_file.h"
#include "data/fashion_mnist.h"
#include "keras/applications.h"
#include "keras/checkpoint_callbacks.h"
#include "keras/keras_compile_config.h"
#include "keras/node_reference_testing.h"
#include "keras/saved_model.h"
#include "keras/sequential.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

using Catch::Matchers::Contains;

// Two branches of different depths; the shorter one is made first, so that
// Ringwork's layer order and Keras' differ.
Model TwoBranches(int64_t classes) {
  SymbolicTensor x = Input({9, 9, 2});
  SymbolicTensor h =
      Apply(Named(Conv2D(4, 3, {.padding = "same", .activation = "relu"}), "conv"), x);
  h = Apply(MaxPool2D(2), Apply(Named(BatchNormalization(), "bn"), h));
  SymbolicTensor b = Apply(Named(Dense(5), "b"), Apply(GlobalAveragePooling2D(), h));
  SymbolicTensor a = Apply(Named(Dense(6, {.activation = "tanh"}), "a1"), Apply(Flatten(), h));
  a = Apply(Named(Dense(5), "a2"), a);
  return Model(x, Apply(Named(Dense(classes, {.activation = "softmax"}), "out"),
                        Apply(Concatenate(), {a, b})));
}

// Where Keras 3 keeps each weight of TwoBranches, worked out by hand from
// keras/src/saving/saving_lib.py (layers/<class in snake case, numbered>/vars/<i>)
// and keras/src/ops/function.py (layers by depth, then by a walk from the output).
const nlohmann::json& ExpectedLayout() {
  static const auto* layout =
      new nlohmann::json{{"layers/conv2d/vars/0", "conv/kernel"},
                         {"layers/conv2d/vars/1", "conv/bias"},
                         {"layers/batch_normalization/vars/0", "bn/gamma"},
                         {"layers/batch_normalization/vars/1", "bn/beta"},
                         {"layers/batch_normalization/vars/2", "bn/moving_mean"},
                         {"layers/batch_normalization/vars/3", "bn/moving_variance"},
                         {"layers/dense/vars/0", "a1/kernel"},
                         {"layers/dense/vars/1", "a1/bias"},
                         {"layers/dense_1/vars/0", "a2/kernel"},
                         {"layers/dense_1/vars/1", "a2/bias"},
                         {"layers/dense_2/vars/0", "b/kernel"},
                         {"layers/dense_2/vars/1", "b/bias"},
                         {"layers/dense_3/vars/0", "out/kernel"},
                         {"layers/dense_3/vars/1", "out/bias"}};
  return *layout;
}

// Python's reading of `file` against the .npz: its JSON report.
nlohmann::json ReadWithH5py(const std::string& file, const std::string& npz,
                            const std::string& dir) {
  std::ofstream(dir + "/layout.json") << ExpectedLayout().dump();
  const SubprocessResult r = RunSubprocess(
      {"/usr/bin/python3", "keras/testdata/keras_archive_read.py", file, npz, dir + "/layout.json"},
      {});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.output.substr(r.output.find('{')));
}

void RequireSamePredictions(Model& a, Model& b, const Tensor& x) {
  absl::StatusOr<Tensor> pa = a.Predict(x), pb = b.Predict(x);
  REQUIRE(pa.ok());
  REQUIRE(pb.ok());
  REQUIRE(pa->size() == pb->size());
  for (int64_t i = 0; i < pa->size(); ++i) CHECK((*pa)[i] == (*pb)[i]);
}

TEST_CASE("Keras' snake-case names of layer classes", "[keras_archive]") {
  CHECK(KerasSnakeCase("Conv2D") == "conv2d");
  CHECK(KerasSnakeCase("BatchNormalization") == "batch_normalization");
  CHECK(KerasSnakeCase("GlobalAveragePooling2D") == "global_average_pooling2d");
  CHECK(KerasSnakeCase("MaxPooling2D") == "max_pooling2d");
  CHECK(KerasSnakeCase("InputLayer") == "input_layer");
  CHECK(KerasSnakeCase("Dense") == "dense");
}

TEST_CASE("a .keras archive and a .weights.h5 in Keras 3's layout, read by h5py",
          "[keras_archive]") {
  Model model = TwoBranches(3);
  CompileOptions compile = AdamOneThread();
  REQUIRE(model.Compile(compile).ok());
  TrainFewSteps(model, DeterministicInputs({12, 9, 9, 2}), 3);
  const std::string dir = FreshTestDir("keras_archive");
  REQUIRE(SaveModel(model, dir + "/m.keras").ok());
  REQUIRE(model.SaveWeights(dir + "/m.weights.h5").ok());
  REQUIRE(model.SaveWeights(dir + "/m.npz").ok());

  const nlohmann::json archive = ReadWithH5py(dir + "/m.keras", dir + "/m.npz", dir);
  CHECK(archive["members"] == nlohmann::json({"config.json", "metadata.json", "model.weights.h5"}));
  CHECK(archive["class_name"] == "Functional");
  CHECK(archive["layers"] ==
        nlohmann::json({"InputLayer", "Conv2D", "BatchNormalization", "MaxPooling2D", "Flatten",
                        "Dense", "GlobalAveragePooling2D", "Dense", "Dense", "Concatenate",
                        "Dense"}));
  CHECK(archive["root_vars"] == true);
  CHECK(archive["layer_groups"].size() == 11);  // Every layer's, as Keras makes them.
  CHECK(archive["compile_config"]["optimizer"]["class_name"] == "Adam");
  CHECK(archive["compile_config"]["optimizer"]["config"]["learning_rate"] ==
        Approx(0.01).epsilon(1e-6));
  CHECK(archive["compile_config"]["loss"] == "sparse_categorical_crossentropy");
  const nlohmann::json weights = ReadWithH5py(dir + "/m.weights.h5", dir + "/m.npz", dir);
  CHECK(weights["layer_groups"].size() == 11);

  // Back without the C++: as compiled, bit-identical.
  absl::StatusOr<Model> loaded = LoadModel(dir + "/m.keras");
  REQUIRE(loaded.ok());
  CHECK(loaded->compile_options().optimizer.name == "adam");
  CHECK(*loaded->compile_options().optimizer.learning_rate == Approx(0.01f));
  RequireSamePredictions(model, *loaded, DeterministicInputs({5, 9, 9, 2}));
  Model same = TwoBranches(3);
  REQUIRE(same.Compile(compile).ok());
  REQUIRE(same.Build({9, 9, 2}).ok());
  REQUIRE(same.LoadWeights(dir + "/m.weights.h5").ok());
  RequireSamePredictions(model, same, DeterministicInputs({5, 9, 9, 2}));
  Model other = TwoBranches(3);
  REQUIRE(other.Compile(compile).ok());
  REQUIRE(other.Build({9, 9, 2}).ok());
  REQUIRE(other.LoadWeights(dir + "/m.keras").ok());  // Keras' load_weights reads archives too.
  RequireSamePredictions(model, other, DeterministicInputs({5, 9, 9, 2}));
}

TEST_CASE("a model of two named inputs goes into a .keras archive and back", "[keras_archive]") {
  SymbolicTensor image = Input({4, 4, 1}, "image"), numbers = Input({3}, "numbers");
  SymbolicTensor a =
      Apply(Named(Dense(5, {.activation = "relu"}), "seen"), Apply(Flatten(), image));
  SymbolicTensor b = Apply(Named(Dense(5), "counted"), numbers);
  Model model(
      std::vector<SymbolicTensor>{image, numbers},
      Apply(Named(Dense(2, {.activation = "softmax"}), "out"), Apply(Concatenate(), {a, b})));
  REQUIRE(model.Compile(AdamOneThread()).ok());
  TrainFewSteps(model, DeterministicInputs({6, 19}), 2);  // 16 + 3 values side by side.
  const std::string dir = FreshTestDir("keras_archive_two_inputs");
  REQUIRE(SaveModel(model, dir + "/two.keras").ok());
  absl::StatusOr<std::string> config = KerasConfigJson(model);
  REQUIRE(config.ok());
  CHECK(nlohmann::json::parse(*config)["config"]["input_layers"] ==
        nlohmann::json({{"image", 0, 0}, {"numbers", 0, 0}}));
  absl::StatusOr<Model> loaded = LoadModel(dir + "/two.keras");
  INFO(loaded.status().message());
  REQUIRE(loaded.ok());
  CHECK(loaded->signature().input_shapes == model.signature().input_shapes);
  RequireSamePredictions(model, *loaded, DeterministicInputs({4, 19}));
}

TEST_CASE("shared layers go into a .keras archive as one layer of several calls, and back",
          "[keras_archive][shared]") {
  SymbolicTensor left = Input({3}, "left"), right = Input({3}, "right");
  SharedLayer tower = Share(Dense(4, {.activation = "tanh"}));
  SharedLayer again = Share(Dense(4, {.activation = "relu"}));
  SymbolicTensor a = Apply(again, Apply(tower, left));
  SymbolicTensor b = Apply(again, Apply(again, Apply(tower, right)));  // `again` thrice.
  Model model(std::vector<SymbolicTensor>{left, right},
              Apply(Dense(2, {.activation = "softmax"}), Apply(Concatenate(), {a, b})));
  REQUIRE(model.Compile(AdamOneThread()).ok());
  TrainFewSteps(model, DeterministicInputs({6, 6}), 2);
  absl::StatusOr<std::string> config = KerasConfigJson(model);
  REQUIRE(config.ok());
  const nlohmann::json layers = nlohmann::json::parse(*config)["config"]["layers"];
  std::map<std::string, size_t> calls;
  for (const nlohmann::json& layer : layers) calls[layer["name"]] = layer["inbound_nodes"].size();
  CHECK(calls == std::map<std::string, size_t>{{"left", 0},
                                               {"right", 0},
                                               {"dense", 2},
                                               {"dense_1", 3},
                                               {"dense_2", 1},
                                               {"concatenate", 1}});
  const std::string dir = FreshTestDir("keras_archive_shared");
  REQUIRE(SaveModel(model, dir + "/shared.keras").ok());
  absl::StatusOr<Model> loaded = LoadModel(dir + "/shared.keras");
  INFO(loaded.status().message());
  REQUIRE(loaded.ok());
  CHECK(loaded->weights().size() == model.weights().size());
  RequireSamePredictions(model, *loaded, DeterministicInputs({4, 6}));
}

TEST_CASE("LSTM and GRU go into a .keras archive (their cell's variables) and back",
          "[keras_archive]") {
  SymbolicTensor x = Input({6, 3});
  SymbolicTensor h = Apply(Named(LSTM(4, {.return_sequences = true}), "l"), x);
  h = Apply(Named(GRU(3), "g"), h);
  Model model(x, Apply(Named(Dense(2, {.activation = "softmax"}), "out"), h));
  REQUIRE(model.Compile(AdamOneThread()).ok());
  TrainFewSteps(model, DeterministicInputs({8, 6, 3}), 2);
  absl::StatusOr<std::map<std::string, std::string>> layout = KerasH5Layout(model);
  REQUIRE(layout.ok());
  // keras/src/saving/saving_lib.py: an RNN layer's cell is its child "cell".
  CHECK(*layout ==
        std::map<std::string, std::string>{{"layers/lstm/cell/vars/0", "l/kernel"},
                                           {"layers/lstm/cell/vars/1", "l/recurrent_kernel"},
                                           {"layers/lstm/cell/vars/2", "l/bias"},
                                           {"layers/gru/cell/vars/0", "g/kernel"},
                                           {"layers/gru/cell/vars/1", "g/recurrent_kernel"},
                                           {"layers/gru/cell/vars/2", "g/bias"},
                                           {"layers/dense/vars/0", "out/kernel"},
                                           {"layers/dense/vars/1", "out/bias"}});
  const std::string dir = FreshTestDir("keras_archive_recurrent");
  REQUIRE(SaveModel(model, dir + "/rnn.keras").ok());
  absl::StatusOr<Model> loaded = LoadModel(dir + "/rnn.keras");
  INFO(loaded.status().message());
  REQUIRE(loaded.ok());
  RequireSamePredictions(model, *loaded, DeterministicInputs({4, 6, 3}));
}

TEST_CASE("mismatched, damaged and crafted Keras files are refused", "[keras_archive]") {
  Model model = TwoBranches(3);
  REQUIRE(model.Compile(AdamOneThread()).ok());
  REQUIRE(model.Build({9, 9, 2}).ok());
  const std::string dir = FreshTestDir("keras_archive_bad");
  REQUIRE(SaveModel(model, dir + "/m.keras").ok());

  Model wider = TwoBranches(4);
  REQUIRE(wider.Compile(AdamOneThread()).ok());
  REQUIRE(wider.Build({9, 9, 2}).ok());
  absl::Status s = wider.LoadWeights(dir + "/m.keras");
  CHECK(s.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(s.message()), Contains("out/kernel has shape [10, 3]"));
  CHECK_THAT(std::string(s.message()), Contains("[10, 4]"));

  std::ifstream in(dir + "/m.keras", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(dir + "/cut.keras", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  absl::StatusOr<Model> cut = LoadModel(dir + "/cut.keras");
  CHECK(cut.status().code() == absl::StatusCode::kDataLoss);

  std::ofstream(dir + "/text.weights.h5") << "not hdf5 at all";
  s = model.LoadWeights(dir + "/text.weights.h5");
  CHECK(s.code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(s.message()), Contains("not an HDF5 file"));

  // A layer the model lacks, by its place in the file.
  REQUIRE(model.SaveWeights(dir + "/m.weights.h5").ok());
  REQUIRE(RunSubprocess({"/usr/bin/python3", "-c",
                         "import h5py,sys\n"
                         "f=h5py.File(sys.argv[1],'a')\n"
                         "f['layers/dense_9/vars/0']=[1.0]\n",
                         dir + "/m.weights.h5"},
                        {})
              .exit_code == 0);
  s = model.LoadWeights(dir + "/m.weights.h5");
  CHECK(s.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(s.message()), Contains("layers/dense_9/vars/0"));

  // A dataset whose path is a variable's name, beside the one Keras' layout puts
  // there: refused, not copied twice.
  REQUIRE(model.SaveWeights(dir + "/twice.weights.h5").ok());
  REQUIRE(RunSubprocess({"/usr/bin/python3", "-c",
                         "import h5py,sys\n"
                         "f=h5py.File(sys.argv[1],'a')\n"
                         "f['out/kernel']=[[1.0]*3]*10\n",
                         dir + "/twice.weights.h5"},
                        {})
              .exit_code == 0);
  s = model.LoadWeights(dir + "/twice.weights.h5");
  CHECK(s.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(s.message()), Contains("holds out/kernel"));

  // tf.keras 2's HDF5 layout: said so.
  REQUIRE(RunSubprocess({"/usr/bin/python3", "-c",
                         "import h5py,sys\n"
                         "f=h5py.File(sys.argv[1],'w')\n"
                         "f['dense/dense/kernel:0']=[[1.0]*3]*10\n",
                         dir + "/legacy.h5"},
                        {})
              .exit_code == 0);
  s = model.LoadWeights(dir + "/legacy.h5");
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(s.message()), Contains("not in Keras 3's layout"));

  // An archive whose member claims 4 GiB in a file of a few hundred bytes.
  REQUIRE(RunSubprocess({"/usr/bin/python3", "-c",
                         "import struct,sys,zipfile\n"
                         "with zipfile.ZipFile(sys.argv[1],'w') as z:\n"
                         "  z.writestr('config.json','{}')\n"
                         "d=bytearray(open(sys.argv[1],'rb').read())\n"
                         "c=d.rfind(b'PK\\x01\\x02')\n"
                         "d[c+24:c+28]=struct.pack('<I',0xfffffff0)\n"
                         "open(sys.argv[1],'wb').write(d)\n",
                         dir + "/bomb.keras"},
                        {})
              .exit_code == 0);
  absl::StatusOr<Model> bomb = LoadModel(dir + "/bomb.keras");
  CHECK(bomb.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(bomb.status().message()), Contains("more than the archive can hold"));

  // Compile settings Ringwork cannot honour (RMSprop) do not stop a model loading.
  REQUIRE(RunSubprocess({"/usr/bin/python3", "-c",
                         "import json,sys,zipfile\n"
                         "src=zipfile.ZipFile(sys.argv[1])\n"
                         "c=json.loads(src.read('config.json'))\n"
                         "c['compile_config']['optimizer']='rmsprop'\n"
                         "with zipfile.ZipFile(sys.argv[2],'w') as z:\n"
                         "  for n in src.namelist():\n"
                         "    z.writestr(n, json.dumps(c) if n=='config.json' else src.read(n))\n",
                         dir + "/m.keras", dir + "/rmsprop.keras"},
                        {})
              .exit_code == 0);
  absl::StatusOr<Model> rmsprop = LoadModel(dir + "/rmsprop.keras");
  INFO(rmsprop.status().message());
  CHECK(rmsprop.ok());

  // A few bytes that claim a 40 GB tensor: refused before anything is allocated.
  REQUIRE(RunSubprocess({"/usr/bin/python3", "-c",
                         "import h5py,sys\n"
                         "f=h5py.File(sys.argv[1],'w')\n"
                         "f.create_dataset('layers/dense/vars/0',shape=(100000,100000),"
                         "dtype='f4')\n",
                         dir + "/huge.weights.h5"},
                        {})
              .exit_code == 0);
  s = model.LoadWeights(dir + "/huge.weights.h5");
  CHECK(s.code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(s.message()), Contains("layers/dense/vars/0"));
}

TEST_CASE("compile settings go into config.json and come back", "[keras_archive]") {
  CompileOptions options;
  options.optimizer = {.name = "sgd", .learning_rate = 0.05f, .momentum = 0.9f, .nesterov = true};
  options.optimizer.clipping.clipnorm = 1.5f;
  options.losses["price"] = {"mean_squared_error", false};
  options.losses["kind"] = {"sparse_categorical_crossentropy", true};
  options.loss_weights["price"] = 0.25f;
  options.metrics = {"accuracy", "mae"};
  const nlohmann::json config = KerasCompileConfig(options);
  CHECK(config["optimizer"]["class_name"] == "SGD");
  CHECK(config["loss"]["kind"]["class_name"] == "SparseCategoricalCrossentropy");
  absl::StatusOr<CompileOptions> back = CompileOptionsFromKeras(config, "$.compile_config");
  REQUIRE(back.ok());
  CHECK(back->optimizer.name == "sgd");
  CHECK(*back->optimizer.learning_rate == 0.05f);
  CHECK(back->optimizer.momentum == 0.9f);
  CHECK(back->optimizer.nesterov);
  CHECK(back->optimizer.clipping.clipnorm == 1.5f);
  CHECK(back->losses.at("kind").from_logits);
  CHECK(back->losses.at("price").name == "mean_squared_error");
  CHECK(back->loss_weights.at("price") == 0.25f);
  CHECK(back->metrics == std::vector<std::string>{"accuracy", "mae"});

  nlohmann::json amsgrad = config;
  amsgrad["optimizer"] = {{"class_name", "Adam"}, {"config", {{"amsgrad", true}}}};
  absl::StatusOr<CompileOptions> refused = CompileOptionsFromKeras(amsgrad, "$.compile_config");
  CHECK(refused.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(refused.status().message()),
             Contains("$.compile_config.optimizer.config.amsgrad"));
  for (const nlohmann::json& odd :
       {nlohmann::json{{"loss", nlohmann::json::object()}}, nlohmann::json{{"optimizer", 5}},
        nlohmann::json{{"loss", {{"class_name", 7}}}}}) {
    INFO(odd.dump());
    CHECK(CompileOptionsFromKeras(odd, "$.compile_config").status().code() ==
          absl::StatusCode::kInvalidArgument);
  }
  nlohmann::json hinge = config;
  hinge["loss"] = "hinge";
  refused = CompileOptionsFromKeras(hinge, "$.compile_config");
  CHECK_THAT(std::string(refused.status().message()), Contains("$.compile_config.loss"));
  CHECK_THAT(std::string(refused.status().message()), Contains("hinge"));
}

TEST_CASE("ModelCheckpoint writes Keras files, one per epoch with {epoch}", "[keras_archive]") {
  Model model = MlpClassifier(10);
  REQUIRE(model.Compile(AdamOneThread()).ok());
  const std::string dir = FreshTestDir("keras_checkpoint");
  ModelCheckpoint each({.filepath = dir + "/m-{epoch:02d}.keras"});
  ModelCheckpoint last({.filepath = dir + "/last.weights.h5"});
  const Dataset data = Dataset::FromExamples(SyntheticImages(96, 0, 3).train);
  REQUIRE(
      model.Fit(data, {.epochs = 3, .batch_size = 32, .verbose = 0, .callbacks = {&each, &last}})
          .ok());
  for (const char* name : {"m-01.keras", "m-02.keras", "m-03.keras", "last.weights.h5"}) {
    INFO(name);
    CHECK(std::filesystem::exists(dir + "/" + name));
  }
  CHECK_FALSE(std::filesystem::exists(dir + "/m-00.keras"));
  CHECK_FALSE(std::filesystem::exists(dir + "/m-04.keras"));
  // The last epoch's files hold the final weights.
  absl::StatusOr<Model> loaded = LoadModel(dir + "/m-03.keras");
  REQUIRE(loaded.ok());
  RequireSamePredictions(model, *loaded, DeterministicInputs({4, 28, 28, 1}));
  Model again = MlpClassifier(10);
  REQUIRE(again.Compile(AdamOneThread()).ok());
  REQUIRE(again.Build({28, 28, 1}).ok());
  REQUIRE(again.LoadWeights(dir + "/last.weights.h5").ok());
  RequireSamePredictions(model, again, DeterministicInputs({4, 28, 28, 1}));

  ModelCheckpoint wrong({.filepath = dir + "/m.h5"});
  const absl::Status refused =
      model.Fit(data, {.epochs = 1, .verbose = 0, .callbacks = {&wrong}}).status();
  CHECK(refused.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(refused.message()), Contains("must end in .keras or .weights.h5"));
}

}  // namespace
}  // namespace ringwork
