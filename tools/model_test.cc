// tools/model on what a real `train` run wrote: inspect a checkpoint directory,
// export its weights (equal to the ones --save_weights wrote at the end, as NumPy
// reads them), and clear errors for a format it lacks, a missing path, a
// damaged checkpoint.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

using Catch::Matchers::Contains;

SubprocessResult Run(const std::vector<std::string>& argv) {
  Subprocess::Options options;
  options.timeout_s = 120;
  return RunSubprocess(argv, options);
}

TEST_CASE("model inspects a checkpoint and exports its weights as save_weights wrote them",
          "[weights]") {
  const std::string dir = FreshTestDir("model_tool");
  SubprocessResult trained =
      Run({"tools/train", "--dataset=synthetic", "--synthetic_examples=512", "--epochs=2",
           "--global_batch_size=64", "--verbose=0", "--intra_op_threads=1",
           "--checkpoint_dir=" + dir + "/ckpt", "--save_weights=" + dir + "/final.npz"});
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);

  SubprocessResult inspected = Run({"tools/model", "inspect", dir + "/ckpt"});
  INFO(inspected.output);
  REQUIRE(inspected.exit_code == 0);
  CHECK_THAT(inspected.output, Contains("Ringwork checkpoint, step 16") &&
                                   Contains("written at the end of training") &&
                                   Contains("dense/kernel") && Contains("optimizer slot tensors"));

  SubprocessResult exported =
      Run({"tools/model", "export", "--to=safetensors", dir + "/ckpt", dir + "/final.safetensors"});
  INFO(exported.output);
  REQUIRE(exported.exit_code == 0);
  // NumPy's view: the same arrays, bit for bit, under the same names.
  const SubprocessResult same =
      Run({"/usr/bin/python3", "-c",
           "import json, struct, sys, numpy as np\n"
           "d = open(sys.argv[2], 'rb').read(); n = struct.unpack('<Q', d[:8])[0]\n"
           "h = json.loads(d[8:8 + n]); body = d[8 + n:]\n"
           "w = np.load(sys.argv[1]); h.pop('__metadata__')\n"
           "assert sorted(h) == sorted(w.files), (sorted(h), w.files)\n"
           "for k, v in h.items():\n"
           "  a = np.frombuffer(body[v['data_offsets'][0]:v['data_offsets'][1]], '<f4')\n"
           "  assert np.array_equal(a.reshape(v['shape']), w[k]), k\n"
           "print('equal', len(h))\n",
           dir + "/final.npz", dir + "/final.safetensors"});
  INFO(same.output);
  CHECK(same.exit_code == 0);
  CHECK_THAT(same.output, Contains("equal 6"));

  SubprocessResult onnx =
      Run({"tools/model", "export", "--to=onnx", dir + "/ckpt", dir + "/model.onnx"});
  CHECK(onnx.exit_code == 2);
  CHECK_THAT(onnx.output, Contains("holds weights, not the architecture"));
  CHECK(Run({"tools/model", "inspect", dir + "/none.npz"}).exit_code == 2);
  std::filesystem::create_directories(dir + "/no_checkpoints");
  CHECK(Run({"tools/model", "inspect", dir + "/no_checkpoints"}).exit_code == 2);
  // Fine-tuning from the directory: its latest checkpoint's weights.
  SubprocessResult tuned = Run({"tools/train", "--dataset=synthetic", "--synthetic_examples=512",
                                "--epochs=1", "--global_batch_size=64", "--verbose=0",
                                "--intra_op_threads=1", "--initial_weights=" + dir + "/ckpt"});
  INFO(tuned.output);
  CHECK(tuned.exit_code == 0);

  // One byte flipped in the middle of the latest checkpoint's first kernel (its
  // manifest gives where the tensor lies): its CRC names it.
  std::string latest;
  for (const auto& entry : std::filesystem::directory_iterator(dir + "/ckpt")) {
    if (entry.path().extension() == ".rwckpt" && entry.path().string() > latest) {
      latest = entry.path().string();
    }
  }
  REQUIRE(!latest.empty());
  std::fstream f(latest, std::ios::in | std::ios::out | std::ios::binary);
  uint64_t manifest_bytes = 0;
  f.seekg(16);
  f.read(reinterpret_cast<char*>(&manifest_bytes), 8);
  std::string manifest(manifest_bytes, '\0');
  f.seekg(64);
  f.read(manifest.data(), static_cast<std::streamsize>(manifest_bytes));
  const nlohmann::json m = nlohmann::json::parse(manifest);
  uint64_t at = 0;
  for (const auto& t : m["tensors"]) {
    if (t["name"] == "dense/kernel")
      at = t["offset"].get<uint64_t>() + t["bytes"].get<uint64_t>() / 2;
  }
  at += (64 + manifest_bytes + 63) / 64 * 64;  // The data section's start.
  f.seekg(static_cast<std::streamoff>(at));
  const char byte = static_cast<char>(f.get());
  f.seekp(static_cast<std::streamoff>(at));
  f.put(static_cast<char>(byte ^ 0x5a));
  f.close();
  SubprocessResult corrupt = Run({"tools/model", "export", "--to=npz", latest, dir + "/x.npz"});
  INFO(corrupt.output);
  CHECK(corrupt.exit_code == 5);
  CHECK_THAT(corrupt.output, Contains(latest));
}

TEST_CASE("train takes a Keras JSON for its model, and refuses a layer it lacks with exit 2",
          "[keras_import]") {
  const std::string dir = FreshTestDir("model_config");
  // Keras 3's config.json of a Sequential model on [28, 28] inputs (the data's
  // [28, 28, 1] reshaped): Flatten, Dense 32 relu, Dense 10 softmax.
  std::ofstream(dir + "/keras3.json") << R"({"module": "keras", "class_name": "Sequential",
    "config": {"name": "sequential", "layers": [
      {"module": "keras.layers", "class_name": "InputLayer", "config": {"batch_shape": [null, 28, 28], "dtype": "float32", "sparse": false, "name": "input_layer"}},
      {"module": "keras.layers", "class_name": "Flatten", "config": {"name": "flatten", "trainable": true, "dtype": "float32", "data_format": "channels_last"}},
      {"module": "keras.layers", "class_name": "Dense", "config": {"name": "dense", "units": 32, "activation": "relu"}},
      {"module": "keras.layers", "class_name": "Dense", "config": {"name": "dense_1", "units": 10, "activation": "softmax"}}]}})";
  SubprocessResult trained =
      Run({"tools/train", "--dataset=synthetic", "--synthetic_examples=2048", "--epochs=2",
           "--global_batch_size=64", "--verbose=0", "--intra_op_threads=1",
           "--model_config=" + dir + "/keras3.json", "--metrics_json=" + dir + "/m.json"});
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  std::ifstream metrics(dir + "/m.json");
  const nlohmann::json m = nlohmann::json::parse(metrics);
  CHECK(m["test_accuracy"].get<double>() > 0.5);  // Ten synthetic classes: chance is 0.1.
  // The loss took the softmax's probabilities: a softmax over them again could not
  // go below -log(e / (e + 9)) = 1.46.
  CHECK(m["test_loss"].get<double>() < 1.4);

  std::ofstream(dir + "/rnn.json") << R"({"class_name": "Sequential", "config": {"layers": [
      {"class_name": "Flatten", "config": {"batch_input_shape": [null, 28, 28]}},
      {"class_name": "Conv3D", "config": {"filters": 2}}]}})";
  SubprocessResult refused = Run({"tools/train", "--model_config=" + dir + "/rnn.json"});
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.output, Contains("$.config.layers[1]: layer class Conv3D is not supported"));
  // An LSTM where the data's examples are not sequences: the layer and the shape.
  std::ofstream(dir + "/lstm.json") << R"({"class_name": "Sequential", "config": {"layers": [
      {"class_name": "Flatten", "config": {"batch_input_shape": [null, 28, 28]}},
      {"class_name": "LSTM", "config": {"units": 4}}]}})";
  refused = Run({"tools/train", "--model_config=" + dir + "/lstm.json"});
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.output, Contains("lstm (LSTM) needs [steps, features] inputs, got [784]"));
}

TEST_CASE("model predicts from a saved model as ONNX Runtime does, alone or over 2 workers",
          "[predict]") {
  const std::string dir = FreshTestDir("model_predict");
  SubprocessResult trained =
      Run({"tools/train", "--model=cnn", "--dataset=synthetic", "--synthetic_examples=256",
           "--epochs=1", "--global_batch_size=64", "--verbose=0", "--intra_op_threads=1",
           "--save_model=" + dir + "/cnn.keras"});
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  // 301 Fashion-MNIST test images (odd: the workers' shares differ), as train scales them.
  REQUIRE(Run({"/usr/bin/python3", "-c",
               "import gzip, sys, numpy as np\n"
               "raw = gzip.open('/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz')"
               ".read()\n"
               "x = np.frombuffer(raw, np.uint8, offset=16)[:301 * 784].reshape(301, 28, 28, 1)\n"
               "x = x.astype(np.float32) * np.float32(1 / 255)\n"
               "np.savez(sys.argv[1] + '/test.npz', image=x); x.tofile(sys.argv[1] + '/x.f32')\n"
               "np.savez(sys.argv[1] + '/one.npz', image=x[:1])\n",
               dir})
              .exit_code == 0);

  SubprocessResult inspected = Run({"tools/model", "inspect", dir + "/cnn.keras"});
  INFO(inspected.output);
  CHECK(inspected.exit_code == 0);
  CHECK_THAT(inspected.output, Contains("Keras 3 archive") && Contains("conv2d_1 (Conv2D)") &&
                                   Contains("compiled: optimizer adam"));
  for (const auto& [to, out] : std::vector<std::pair<std::string, std::string>>{
           {"onnx", "/cnn.onnx"}, {"h5", "/cnn.weights.h5"}, {"tfjs", "/tfjs"}}) {
    SubprocessResult exported =
        Run({"tools/model", "export", "--to=" + to, dir + "/cnn.keras", dir + out});
    INFO(exported.output);
    CHECK(exported.exit_code == 0);
  }
  CHECK(
      Run({"tools/model", "export", "--to=keras", dir + "/cnn.keras", dir + "/x.zip"}).exit_code ==
      2);

  const std::vector<std::string> predict = {"tools/model", "predict", dir + "/cnn.keras",
                                            "--data=npz:" + dir + "/test.npz", "--features=image"};
  std::vector<std::string> alone = predict, two = {"tools/launch/launch", "--num_workers=2", "--"};
  alone.push_back("--output=" + dir + "/alone.npy");
  two.insert(two.end(), predict.begin(), predict.end());
  std::vector<std::string> one = two;  // Fewer examples than workers.
  two.push_back("--output=" + dir + "/two.npy");
  *std::find(one.begin(), one.end(), "--data=npz:" + dir + "/test.npz") =
      "--data=npz:" + dir + "/one.npz";
  one.push_back("--output=" + dir + "/one.npy");
  for (const auto& argv : {alone, two, one}) {
    SubprocessResult predicted = Run(argv);
    INFO(predicted.output);
    REQUIRE(predicted.exit_code == 0);
  }
  Subprocess::Options node;
  node.env["NODE_PATH"] = std::getenv("RINGWORK_NODE_MODULES") != nullptr
                              ? std::getenv("RINGWORK_NODE_MODULES")
                              : "/opt/ringwork-npm/node_modules";
  SubprocessResult ort =
      RunSubprocess({"/usr/bin/node", "keras/testdata/onnx_run.js", dir + "/cnn.onnx",
                     dir + "/x.f32", "[301, 28, 28, 1]", dir + "/ort"},
                    node);
  INFO(ort.output);
  REQUIRE(ort.exit_code == 0);
  SubprocessResult compared =
      Run({"/usr/bin/python3", "-c",
           "import glob, sys, numpy as np\n"
           "d = sys.argv[1]; a = np.load(d + '/alone.npy'); b = np.load(d + '/two.npy')\n"
           "o = np.fromfile(glob.glob(d + '/ort.*.f32')[0], np.float32).reshape(a.shape)\n"
           "assert a.shape == (301, 10), a.shape\n"
           "assert np.array_equal(a, b), 'two workers differ'\n"
           "assert np.array_equal(np.load(d + '/one.npy'), a[:1]), 'one example differs'\n"
           "err = np.abs(a - o) / np.maximum(1, np.abs(o) * 10)\n"
           "assert err.max() <= 1e-4, err.max()\n"
           "assert (a.argmax(1) == o.argmax(1)).all()\n"
           "print('agree', err.max())\n",
           dir});
  INFO(compared.output);
  CHECK(compared.exit_code == 0);

  SubprocessResult no_model =
      Run({"tools/model", "predict", dir + "/cnn.weights.h5", "--data=npz:" + dir + "/test.npz",
           "--output=" + dir + "/n.npy"});
  CHECK(no_model.exit_code == 2);
}

}  // namespace
}  // namespace ringwork
