// The sidecar evaluator (`train` as a TF_CONFIG task of type evaluator) beside real
// training processes: it evaluates the chief's checkpoints as they appear, ends
// with the final one, gives up after its timeout, and training never waits for it.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "observability/event_file.h"
#include "testing/process_cluster.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

namespace fs = std::filesystem;

constexpr char kTrain[] = "tools/train";
constexpr char kLaunch[] = "tools/launch/launch";
constexpr double kGuardS = 90;

const std::vector<std::string> kArgs = {
    "--dataset=synthetic", "--synthetic_examples=4096", "--global_batch_size=128", "--epochs=3",
    "--verbose=1",         "--intra_op_threads=1"};

// Every record's CRCs checked; one file per directory (one writer each).
ScalarCurves Scalars(const std::string& dir) {
  CHECK(EventFiles(dir).size() == 1);
  absl::StatusOr<ScalarCurves> curves = ReadScalarCurves(dir);
  INFO(curves.status().message());
  REQUIRE(curves.ok());
  return *curves;
}

TEST_CASE(
    "the evaluator scores each new checkpoint and stops after the final one; with "
    "TensorBoard's curves beside the chief's",
    "[evaluator]") {
  const std::string dir = FreshTestDir("eval_ckpt");
  const std::string logs = FreshTestDir("eval_tensorboard");
  std::vector<std::string> argv = {kLaunch, "--num_workers=2", "--evaluator", "--", kTrain};
  argv.insert(argv.end(), kArgs.begin(), kArgs.end());
  argv.insert(argv.end(),
              {"--checkpoint_dir=" + dir, "--checkpoint_freq_steps=16", "--evaluator_poll_s=0.05",
               "--tensorboard_dir=" + logs, "--metrics_json=" + dir + "/metrics.json"});
  Subprocess::Options options;
  options.timeout_s = kGuardS;
  SubprocessResult r = RunSubprocess(argv, options);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("[launch] I") != std::string::npos);
  CHECK(r.output.find("evaluator:0 exited with code 0") != std::string::npos);

  // One JSON line per evaluated checkpoint, the last the final one; its accuracy
  // is the one the chief measured on the same test set.
  std::ifstream in(dir + "/evaluations.jsonl");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(!lines.empty());
  CHECK(lines.back().find("\"final\":true") != std::string::npos);
  for (size_t i = 0; i + 1 < lines.size(); ++i)
    CHECK(lines[i].find("\"final\":false") != std::string::npos);
  std::smatch m;
  REQUIRE(std::regex_search(lines.back(), m, std::regex("\"accuracy\":([0-9.]+)")));
  const double evaluated = std::stod(m[1]);
  REQUIRE(std::regex_search(r.output, m, std::regex("\\[worker:0\\] Test accuracy: ([0-9.]+)")));
  CHECK(std::abs(evaluated - std::stod(m[1])) < 5e-5);
  CHECK(lines.back().find("\"step\":96") != std::string::npos);

  // The chief's curves: one value per epoch, the last as the metrics JSON has it.
  auto train = Scalars(logs + "/train");
  CHECK(train["epoch_loss"].size() == 3);
  CHECK(train["epoch_accuracy"].size() == 3);
  CHECK(train["epoch_samples_per_second"].size() == 3);
  std::ifstream metrics_in(dir + "/metrics.json");
  const nlohmann::json metrics = nlohmann::json::parse(metrics_in);
  CHECK(train["epoch_loss"][2] == Approx(metrics["final_train_loss"].get<double>()).epsilon(1e-6));
  CHECK(train["epoch_accuracy"][2] ==
        Approx(metrics["final_train_accuracy"].get<double>()).epsilon(1e-6));
  // The evaluator's: its final checkpoint ends epoch 3 (step 2 from 0).
  auto validation = Scalars(logs + "/validation");
  REQUIRE(std::regex_search(lines.back(), m, std::regex("\"loss\":([0-9.e-]+)")));
  CHECK(validation["epoch_loss"].count(2) == 1);
  CHECK(validation["epoch_loss"][2] == Approx(std::stod(m[1])).epsilon(1e-6));
  CHECK(validation["evaluation_loss_vs_iterations"].count(96) == 1);
}

TEST_CASE("an evaluator without checkpoints gives up with exit 4, naming the flag", "[evaluator]") {
  const std::string dir = FreshTestDir("eval_none");
  Subprocess::Options options;
  options.timeout_s = kGuardS;
  options.env["TF_CONFIG"] =
      R"({"cluster": {"worker": ["127.0.0.1:1"], "evaluator": ["127.0.0.1:2"]},
          "task": {"type": "evaluator", "index": 0}})";
  SubprocessResult r = RunSubprocess({kTrain, "--dataset=synthetic", "--checkpoint_dir=" + dir,
                                      "--evaluator_timeout_s=1", "--evaluator_poll_s=0.1"},
                                     options);
  INFO(r.output);
  CHECK(r.exit_code == 4);
  CHECK(r.output.find("no checkpoint in " + dir + " for 1 s") != std::string::npos);
  CHECK(r.output.find("--evaluator_timeout_s") != std::string::npos);

  SECTION("and without --checkpoint_dir it fails at once with 2") {
    SubprocessResult usage = RunSubprocess({kTrain, "--dataset=synthetic"}, options);
    INFO(usage.output);
    CHECK(usage.exit_code == 2);
    CHECK(usage.output.find("an evaluator task needs --checkpoint_dir") != std::string::npos);
  }
}

TEST_CASE("training never waits for an evaluator that is not running", "[evaluator]") {
  ProcessCluster cluster({kTrain, 2, false, kArgs, {}, kGuardS});
  // The evaluator is in every worker's TF_CONFIG but never started.
  for (int i = 0; i < 2; ++i) {
    std::string config = cluster.tf_config(i);
    const std::string cluster_key = "\"cluster\":{";
    const size_t at = config.find(cluster_key);
    REQUIRE(at != std::string::npos);
    config.insert(at + cluster_key.size(), "\"evaluator\":[\"127.0.0.1:9\"],");
    cluster.SetTfConfig(i, config);
  }
  for (const auto& r : cluster.Run()) {
    INFO(r.output);
    CHECK(r.exit_code == 0);
  }
}

}  // namespace
}  // namespace ringwork
