// Elastic training over streamed files on localhost clusters of real `train`
// processes: a worker killed in training leaves the others re-sharding the files
// from the step reached (every example once per epoch); one killed as the test
// files' evaluation starts leaves the others reading them again between them.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "data/pipeline/test_records.h"
#include "testing/log_lines.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

constexpr char kTrain[] = "tools/train";
constexpr char kLaunch[] = "tools/launch/launch";
constexpr double kGuardS = 120;  // Per process; reaching it is a failure.

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

// 2 files of 1200 records in `dir` (8 features that tell the class, i % 3, apart).
void WriteClassFiles(const std::string& dir) {
  WriteExampleFiles(dir, {1200, 1200}, [](int64_t i) {
    std::vector<float> x(8);
    for (int k = 0; k < 8; ++k) {
      x[static_cast<size_t>(k)] = (k % 3 == i % 3 ? 1.5f : 0.f) + 0.3f * std::sin(0.7f * i + k);
    }
    return SerializeExample({{"x", x}}, {{"y", {i % 3}}});
  });
}

TEST_CASE(
    "4 workers over TFRecord files; worker 2 killed: 3 go on from the step reached, every "
    "example trained once per epoch",
    "[elastic]") {
  // With elastic training AUTO reads the files as DATA, one common order, 20 steps of 120.
  const std::string dir = FreshTestDir("elastic_files");
  WriteClassFiles(dir);
  std::vector<std::string> argv = {kLaunch,
                                   "--num_workers=4",
                                   "--elastic",
                                   "--",
                                   kTrain,
                                   "--train_data=tfrecord:" + dir + "/f*.tfrecord",
                                   "--targets=y",
                                   "--num_classes=3",
                                   "--epochs=3",
                                   "--global_batch_size=120",
                                   "--verbose=0",
                                   "--intra_op_threads=1",
                                   "--inter_op_threads=1",
                                   "--min_workers=2",
                                   "--metrics_json=" + dir + "/metrics.json"};
  Subprocess::Options options;
  options.env["RINGWORK_CRASH_AT"] = "allreduce#30@worker:2";
  options.timeout_s = kGuardS;
  const SubprocessResult r = Subprocess::Start(argv, options).Wait();
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(LogLineTime(r.output, "crash point", "worker:2") >= 0);
  const std::vector<std::string> fingerprints = WeightsFingerprints(r.output);
  REQUIRE(fingerprints.size() == 3);
  CHECK(std::set<std::string>(fingerprints.begin(), fingerprints.end()).size() == 1);
  const nlohmann::json metrics = ReadJson(dir + "/metrics.json");
  CHECK(metrics["generations"] == 1);
  CHECK(metrics["num_workers"] == 3);
  CHECK(metrics["train_examples"] == 3 * 2400);  // None skipped or trained twice.
  CHECK(metrics["train_examples_per_epoch"] == 2400);
}

TEST_CASE(
    "3 workers over TFRecord files; worker 1 dies as the test files' evaluation starts: the "
    "other 2 read them again between them and the job succeeds",
    "[elastic]") {
  const std::string dir = FreshTestDir("elastic_files_evaluate");
  WriteClassFiles(dir);
  const std::vector<std::string> argv = {kLaunch,
                                         "--num_workers=3",
                                         "--elastic",
                                         "--",
                                         kTrain,
                                         "--train_data=tfrecord:" + dir + "/f*.tfrecord",
                                         "--test_data=tfrecord:" + dir + "/f0*.tfrecord",
                                         "--targets=y",
                                         "--num_classes=3",
                                         "--epochs=1",
                                         "--global_batch_size=120",
                                         "--verbose=0",
                                         "--intra_op_threads=1",
                                         "--inter_op_threads=1",
                                         "--min_workers=2",
                                         "--metrics_json=" + dir + "/metrics.json"};
  Subprocess::Options options;
  options.env["RINGWORK_CRASH_AT"] = "final_evaluate@worker:1";
  options.timeout_s = kGuardS;
  const SubprocessResult r = Subprocess::Start(argv, options).Wait();
  INFO(r.output);
  CHECK(r.exit_code == 0);
  REQUIRE(LogLineTime(r.output, "crash point final_evaluate", "worker:1") >= 0);
  for (const std::string task : {"worker:0", "worker:2"}) {
    INFO(task);
    CHECK(LogLineTime(r.output, "2 of 3 workers evaluate again", task) >= 0);
  }
  const nlohmann::json metrics = ReadJson(dir + "/metrics.json");
  CHECK(metrics["num_workers"] == 2);
  CHECK(metrics["train_examples"] == 2400);  // Training had ended, with 3.
  CHECK(metrics["test_accuracy"].get<double>() > 0.9);
}

}  // namespace
}  // namespace ringwork
