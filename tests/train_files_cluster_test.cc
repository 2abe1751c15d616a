// train on your files, on localhost clusters of real processes: TFRecord shards
// of tf.train.Example (some GZIP), CSV, folders of PNG files; every example once
// per epoch, test metrics in the JSON; a flipped byte in a shard stops every worker with exit 8
// naming the file and the record; bad flags fail at once with exit 2.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "data/pipeline/test_records.h"
#include "testing/log_lines.h"
#include "testing/process_cluster.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

constexpr char kTrain[] = "tools/train";

// Example i: "x", 8 floats that tell its class (i % 3) apart; "y", the class.
std::string Example(int64_t i) {
  std::vector<float> x(8);
  for (int k = 0; k < 8; ++k) {
    x[static_cast<size_t>(k)] = (k % 3 == i % 3 ? 1.5f : 0.f) + 0.3f * std::sin(0.7f * i + k);
  }
  return SerializeExample({{"x", x}}, {{"y", {i % 3}}});
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

TEST_CASE("two workers train on TFRecord shards of uneven sizes", "[train_files]") {
  const std::string dir = FreshTestDir("train_files");
  WriteExampleFiles(dir + "", {300, 120, 60}, Example);  // f0..f2: training
  std::filesystem::create_directories(dir + "/test");
  WriteExampleFiles(dir + "/test", {90}, [](int64_t i) { return Example(i + 1000); });
  const std::string metrics = dir + "/metrics.json";
  ProcessCluster cluster({kTrain,
                          2,
                          false,
                          {"--train_data=tfrecord:" + dir + "/f*.tfrecord",
                           "--test_data=tfrecord:" + dir + "/test/*.tfrecord", "--targets=y",
                           "--epochs=4", "--global_batch_size=30", "--metrics_json=" + metrics}});
  std::vector<SubprocessResult> results = cluster.Run();
  for (const auto& r : results) {
    INFO(r.output);
    CHECK(r.exit_code == 0);
  }
  const nlohmann::json j = ReadJson(metrics);
  CHECK(j["train_examples_per_epoch"].get<int64_t>() == 480);
  CHECK(j["test_accuracy"].get<double>() >= 0.9);
  CHECK(j.contains("test_loss"));
  // AUTO took FILE (3 files for 2 workers): worker 0 reads f0 and f2.
  CHECK(results[0].output.find("Unknown") == std::string::npos);  // Printed at the end only.
}

TEST_CASE("regression from CSV: float targets learn with the mean squared error", "[train_files]") {
  // y = x W + noise of variance 0.01: 6 features, 3 targets, in 3 files.
  const std::string dir = FreshTestDir("train_csv");
  auto write = [&](const std::string& path, int rows, int seed) {
    std::ofstream out(path);
    out << "x0,x1,x2,x3,x4,x5,y0,y1,y2\n";
    for (int r = 0; r < rows; ++r) {
      double x[6];
      for (int k = 0; k < 6; ++k) x[k] = std::sin(1.3 * (r + seed) * (k + 1) + k);
      for (int k = 0; k < 6; ++k) out << x[k] << ",";
      for (int t = 0; t < 3; ++t) {
        double y = 0;
        for (int k = 0; k < 6; ++k) y += x[k] * std::cos(0.5 * (t + 1) * (k + 2));
        y += 0.1 * std::sin(17.0 * (r + seed) + t);  // Noise of variance about 0.005.
        out << y << (t < 2 ? "," : "\n");
      }
    }
  };
  for (int f = 0; f < 3; ++f) write(dir + "/train" + std::to_string(f) + ".csv", 700, 5000 * f);
  write(dir + "/test.csv", 300, 99999);
  const std::string metrics = dir + "/metrics.json";
  ProcessCluster cluster({kTrain,
                          2,
                          false,
                          {"--train_data=csv:" + dir + "/train*.csv",
                           "--test_data=csv:" + dir + "/test.csv", "--targets=y0,y1,y2",
                           "--epochs=15", "--global_batch_size=64", "--metrics_json=" + metrics}});
  std::vector<SubprocessResult> results = cluster.Run();
  for (const auto& r : results) {
    INFO(r.output);
    CHECK(r.exit_code == 0);
  }
  const nlohmann::json j = ReadJson(metrics);
  INFO(j.dump());
  CHECK(j["train_examples_per_epoch"].get<int64_t>() == 2100);
  CHECK(j["test_loss"].get<double>() <= 0.03);  // The mean squared error.
  CHECK(j.contains("test_mae"));
  CHECK_FALSE(j.contains("test_accuracy"));
}

TEST_CASE("two workers train on folders of PNG files, one folder per class", "[train_files]") {
  // Debian's Fashion-MNIST as PNG files written by Pillow (not Ringwork).
  const std::string dir = FreshTestDir("train_images");
  SubprocessResult written = RunSubprocess({"/usr/bin/python3", "bench/data/fashion_mnist_png.py",
                                            dir, "--train_limit=3000", "--test_limit=1000"},
                                           Subprocess::Options{});
  INFO(written.output);
  REQUIRE(written.exit_code == 0);
  const std::string metrics = dir + "/metrics.json";
  const std::vector<std::string> flags = {"--train_data=images:" + dir + "/train",
                                          "--test_data=images:" + dir + "/test", "--epochs=4",
                                          "--global_batch_size=50"};
  std::vector<std::string> with_json = flags;
  with_json.push_back("--metrics_json=" + metrics);
  std::vector<SubprocessResult> results = ProcessCluster({kTrain, 2, false, with_json}).Run();
  for (const auto& r : results) {
    INFO(r.output);
    CHECK(r.exit_code == 0);
  }
  const nlohmann::json j = ReadJson(metrics);
  INFO(j.dump());
  CHECK(j["train_examples_per_epoch"].get<int64_t>() == 3000);
  CHECK(j["test_accuracy"].get<double>() >= 0.7);
  CHECK(j["input_pipeline"]["skipped"].get<int64_t>() == 0);
  CHECK(j["input_pipeline"]["stages"].contains("1_decode_x1"));  // 1 core per worker here.
  // A file that is not an image stops both workers with exit 8, naming it.
  const std::string bad = dir + "/train/3_dress/bad.png";
  std::ofstream(bad) << "not a PNG";
  results = ProcessCluster({kTrain, 2, false, flags}).Run();
  for (const auto& r : results) {
    INFO(r.output);
    CHECK(r.exit_code == 8);
    CHECK(r.output.find(bad + ": neither a PNG nor a JPEG image") != std::string::npos);
  }
  // With --ignore_errors it is skipped, once an epoch, and counted.
  with_json.push_back("--ignore_errors");
  results = ProcessCluster({kTrain, 2, false, with_json}).Run();
  for (const auto& r : results) {
    INFO(r.output);
    CHECK(r.exit_code == 0);
  }
  const nlohmann::json skipping = ReadJson(metrics);
  CHECK(skipping["input_pipeline"]["skipped"].get<int64_t>() == 4);
  CHECK(skipping["train_examples_per_epoch"].get<int64_t>() == 3000);
}

TEST_CASE("two workers train on NumPy archives; a corrupt one stops both with exit 8",
          "[train_files]") {
  // Written by NumPy: x float32 [n, 8] that tells its class (i % 3) apart, y int64.
  const std::string dir = FreshTestDir("train_npz");
  const std::string script = R"(
import sys, numpy as np
def rows(first, n):
    i = np.arange(first, first + n)
    x = np.where((np.arange(8)[None, :] % 3) == (i[:, None] % 3), 1.5, 0.0)
    x = x + 0.3 * np.sin(0.7 * i[:, None] + np.arange(8)[None, :])
    return x.astype(np.float32), (i % 3).astype(np.int64)
d = sys.argv[1]
for k, (first, n) in enumerate([(0, 300), (300, 180)]):
    x, y = rows(first, n)
    np.savez_compressed(f"{d}/train-{k}.npz", x=x, y=y)
x, y = rows(1000, 90)
np.savez(f"{d}/test.npz", x=x, y=y)
data = bytearray(open(f"{d}/train-1.npz", "rb").read())
name_len = int.from_bytes(data[26:28], "little")
extra_len = int.from_bytes(data[28:30], "little")
size = int.from_bytes(data[18:22], "little")
data[30 + name_len + extra_len + size - 6] ^= 0x55
open(f"{d}/corrupt-1.npz", "wb").write(data)
)";
  SubprocessResult written =
      RunSubprocess({"/usr/bin/python3", "-c", script, dir}, Subprocess::Options{});
  INFO(written.output);
  REQUIRE(written.exit_code == 0);
  const std::string metrics = dir + "/metrics.json";
  std::vector<SubprocessResult> results =
      ProcessCluster(
          {kTrain,
           2,
           false,
           {"--train_data=npz:" + dir + "/train-*.npz", "--test_data=npz:" + dir + "/test.npz",
            "--targets=y", "--epochs=4", "--global_batch_size=30", "--metrics_json=" + metrics}})
          .Run();
  for (const auto& r : results) {
    INFO(r.output);
    CHECK(r.exit_code == 0);
  }
  const nlohmann::json j = ReadJson(metrics);
  INFO(j.dump());
  CHECK(j["train_examples_per_epoch"].get<int64_t>() == 480);
  CHECK(j["test_accuracy"].get<double>() >= 0.9);
  std::filesystem::rename(dir + "/corrupt-1.npz", dir + "/train-1.npz");
  results = ProcessCluster({kTrain,
                            2,
                            false,
                            {"--train_data=npz:" + dir + "/train-*.npz", "--targets=y",
                             "--num_classes=3", "--epochs=1", "--global_batch_size=30"}})
                .Run();
  for (const auto& r : results) {
    INFO(r.output);
    CHECK(r.exit_code == 8);
    CHECK(r.output.find(dir + "/train-1.npz, array x, row ") != std::string::npos);
  }
}

// The weights fingerprint of a 2-worker run over `glob`, interrupted by
// `crash_at` (RINGWORK_CRASH_AT) and resumed by launch from its backup, or not.
std::string TrainFingerprint(const std::string& glob, const std::string& crash_at,
                             const std::string& extra = "--epochs=3") {
  const std::string backup = FreshTestDir("train_files_backup");
  std::vector<std::string> argv = {"tools/launch/launch",
                                   "--num_workers=2",
                                   "--max_restarts=1",
                                   "--",
                                   kTrain,
                                   "--train_data=tfrecord:" + glob,
                                   "--targets=y",
                                   "--num_classes=3",
                                   extra,
                                   "--global_batch_size=30",
                                   "--verbose=0",
                                   "--intra_op_threads=1",
                                   "--inter_op_threads=1",
                                   "--backup_dir=" + backup,
                                   "--backup_freq_steps=4"};
  Subprocess::Options options;
  options.timeout_s = 120;
  if (!crash_at.empty()) options.env["RINGWORK_CRASH_AT"] = crash_at;
  SubprocessResult r = RunSubprocess(argv, options);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  if (!crash_at.empty()) {
    CHECK(r.output.find("resuming from the backup in " + backup) != std::string::npos);
  }
  std::vector<std::string> prints = WeightsFingerprints(r.output);
  REQUIRE(prints.size() == 2);
  CHECK(prints[0] == prints[1]);
  return prints[0];
}

TEST_CASE("a run over files resumed from its backup ends with the uninterrupted weights",
          "[train_files]") {
  // AUTO: 3 files for 2 workers is FILE (each its own files); 1 file is DATA (one
  // common order, each worker its block of every global batch). Shuffled through
  // the default buffer, stopped mid-epoch (the 20th all-reduce of worker 1 is in
  // epoch 1's second half: two a step), resumed at the backup's step.
  const std::string dir = FreshTestDir("train_files_resume");
  std::filesystem::create_directories(dir + "/three");
  std::filesystem::create_directories(dir + "/one");
  WriteExampleFiles(dir + "/three", {90, 60, 45}, Example);
  WriteExampleFiles(dir + "/one", {195}, Example);
  for (const std::string& glob : {dir + "/three/f*.tfrecord", dir + "/one/f*.tfrecord"}) {
    INFO(glob);
    const std::string uninterrupted = TrainFingerprint(glob, "");
    CHECK(TrainFingerprint(glob, "allreduce#20@worker:1") == uninterrupted);
  }
  // steps_per_epoch: epochs of 5 steps from one stream over the repeated file (a
  // pass is 7 steps), resumed mid-run: the run's steps so far are skipped.
  const std::string glob = dir + "/one/f*.tfrecord";
  const std::string uninterrupted = TrainFingerprint(glob, "", "--steps_per_epoch=5");
  CHECK(TrainFingerprint(glob, "allreduce#16@worker:0", "--steps_per_epoch=5") == uninterrupted);
}

TEST_CASE("a flipped byte in a shard stops every worker with exit 8", "[train_files]") {
  const std::string dir = FreshTestDir("train_files_corrupt");
  std::vector<std::string> files = WriteExampleFiles(dir, {200, 200}, Example);
  std::stringstream bytes;
  bytes << std::ifstream(files[1], std::ios::binary).rdbuf();
  std::string corrupt = bytes.str();
  corrupt[corrupt.size() / 2] ^= 0x20;
  std::ofstream(files[1], std::ios::binary | std::ios::trunc) << corrupt;
  ProcessCluster cluster({kTrain,
                          2,
                          false,
                          {"--train_data=tfrecord:" + dir + "/f*.tfrecord", "--targets=y",
                           "--num_classes=3", "--epochs=1", "--global_batch_size=20"}});
  std::vector<SubprocessResult> results = cluster.Run();
  for (const auto& r : results) {
    INFO(r.output);
    CHECK(r.exit_code == 8);
    CHECK(r.output.find("invalid input data: ") != std::string::npos);
    CHECK(r.output.find(files[1] + ": record ") != std::string::npos);
  }
}

TEST_CASE("train refuses data flags it cannot use, naming them", "[train_files]") {
  const std::string dir = FreshTestDir("train_files_flags");
  WriteExampleFiles(dir, {10}, Example);
  const std::string glob = "--train_data=tfrecord:" + dir + "/f*.tfrecord";
  struct Case {
    std::vector<std::string> flags;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{"--train_data=parquet:x", "--targets=y"},
            "--train_data=parquet:x: expected tfrecord:GLOB"},
           {{glob, "--targets=label"}, "feature \"label\" is not in"},
           {{glob, "--targets=y", "--features=x:3x3"}, "feature \"x\": 8 values; its shape [3, 3]"},
           {{"--train_data=tfrecord:" + dir + "/none*", "--targets=y"}, "no file matches"},
           {{glob, "--targets=y", "--model=cnn"}, "--model=cnn reads images"},
           {{glob, "--targets=y", "--test_data=csv:" + dir + "/f*"},
            "--train_data is tfrecord files; so is this"},
           {{"--train_data=images:" + dir, "--features=image:4x4x2"},
            "an image is HxWxC with 1, 3 or 4 channels"},
           {{"--train_data=images:" + dir}, " has no class folders"}}) {
    ProcessCluster cluster({kTrain, 1, false, c.flags});
    std::vector<SubprocessResult> results = cluster.Run();
    INFO(results[0].output);
    CHECK(results[0].output.find(c.message) != std::string::npos);
    CHECK(results[0].exit_code != 0);
  }
}

}  // namespace
}  // namespace ringwork
