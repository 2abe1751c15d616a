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

// launch --elastic of `workers` train tasks over the files WriteClassFiles wrote
// in `dir` (global batch 120, one thread each, at least 2 workers), killed where
// `crash_at` says, plus `more` train flags; what they printed.
SubprocessResult RunElastic(const std::string& dir, int workers, const std::string& crash_at,
                            const std::vector<std::string>& more) {
  std::vector<std::string> argv = {kLaunch,
                                   "--num_workers=" + std::to_string(workers),
                                   "--elastic",
                                   "--",
                                   kTrain,
                                   "--train_data=tfrecord:" + dir + "/f*.tfrecord",
                                   "--targets=y",
                                   "--num_classes=3",
                                   "--global_batch_size=120",
                                   "--verbose=0",
                                   "--intra_op_threads=1",
                                   "--inter_op_threads=1",
                                   "--min_workers=2",
                                   "--metrics_json=" + dir + "/metrics.json"};
  argv.insert(argv.end(), more.begin(), more.end());
  Subprocess::Options options;
  options.env["RINGWORK_CRASH_AT"] = crash_at;
  options.timeout_s = kGuardS;
  return Subprocess::Start(argv, options).Wait();
}

TEST_CASE(
    "4 workers over TFRecord files; worker 2 killed: 3 go on from the step reached, every "
    "example trained once per epoch",
    "[elastic]") {
  // With elastic training AUTO reads the files as DATA, one common order, 20 steps of 120.
  const std::string dir = FreshTestDir("elastic_files");
  WriteClassFiles(dir);
  const SubprocessResult r = RunElastic(dir, 4, "allreduce#30@worker:2", {"--epochs=3"});
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
  const SubprocessResult r =
      RunElastic(dir, 3, "final_evaluate@worker:1",
                 {"--epochs=1", "--test_data=tfrecord:" + dir + "/f0*.tfrecord"});
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
