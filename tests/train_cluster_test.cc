// The train binary on localhost clusters of real processes: Fashion-MNIST from
// Debian's package, metrics written, replicas identical, a killed worker fails the
// job quickly, bad flags fail at once.
#include <signal.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "testing/process_cluster.h"

namespace ringwork {
namespace {

constexpr char kTrain[] = "tools/train";

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

std::set<std::string> Fingerprints(const std::vector<SubprocessResult>& results) {
  std::set<std::string> found;
  const std::regex pattern("weights fingerprint ([0-9a-f]{16})");
  for (const auto& r : results) {
    std::smatch m;
    if (std::regex_search(r.output, m, pattern)) found.insert(m[1]);
  }
  return found;
}

TEST_CASE("two workers train on Fashion-MNIST and agree bit for bit", "[train]") {
  const std::string metrics = TempPath("metrics.json");
  ProcessCluster cluster(
      {kTrain, 2, false, {"--epochs=2", "--steps_per_epoch=60", "--metrics_json=" + metrics}});
  std::vector<SubprocessResult> results = cluster.Run();
  for (const auto& r : results) {
    INFO(r.output);
    CHECK(r.exit_code == 0);
  }
  CHECK(results[0].output.find("Epoch 2/2") != std::string::npos);
  CHECK(results[0].output.find("Test accuracy: ") != std::string::npos);
  CHECK(results[1].output.find("Epoch 1/2") == std::string::npos);  // Only the chief prints.
  CHECK(Fingerprints(results).size() == 1);
  std::ifstream in(metrics);
  std::stringstream text;
  text << in.rdbuf();
  INFO(text.str());
  for (const char* key : {"\"test_accuracy\"", "\"test_loss\"", "\"train_samples_per_second\"",
                          "\"wall_seconds\"", "\"num_workers\": 2"}) {
    CHECK(text.str().find(key) != std::string::npos);
  }
  std::smatch m;
  const std::string json = text.str();
  REQUIRE(std::regex_search(json, m, std::regex("\"test_accuracy\": ([0-9.]+)")));
  CHECK(std::stod(m[1]) > 0.70);
  // Where the steps' time went: only the four fractions, summing to 1; the
  // slowest worker beside them; the same figures on the chief's epoch lines.
  const nlohmann::json parsed = nlohmann::json::parse(json);
  REQUIRE(parsed.contains("step_breakdown"));
  double sum = 0;
  for (const auto& [name, value] : parsed["step_breakdown"].items()) {
    CHECK((name == "compute" || name == "hidden_communication" || name == "exposed_communication" ||
           name == "data_wait"));
    CHECK(value.get<double>() >= 0);
    sum += value.get<double>();
  }
  CHECK(parsed["step_breakdown"].size() == 4);
  CHECK(sum == Approx(1.0).margin(0.02));
  CHECK(parsed["step_breakdown_per_epoch"].size() == 2);
  if (parsed.contains("slowest_worker")) {  // Named only when the others waited for it.
    const int slowest = parsed["slowest_worker"]["rank"].get<int>();
    CHECK((slowest == 0 || slowest == 1));
    CHECK(parsed["slowest_worker"]["others_waited_ms_per_step"].get<double>() >= 0.05);
  }
  CHECK(
      std::regex_search(results[0].output,
                        std::regex("60/60 .* - step: [0-9]+% compute, [0-9]+% hidden comm, [0-9]+% "
                                   "exposed comm, [0-9]+% data wait")));
}

TEST_CASE("one epoch trains on every one of Fashion-MNIST's 60000 examples", "[train]") {
  // 60000 = 117 x 512 + 96: the last global batch is short, and kept (as Keras).
  const std::string metrics = TempPath("metrics_examples.json");
  ProcessCluster cluster({kTrain,
                          2,
                          false,
                          {"--model=mlp", "--global_batch_size=512", "--epochs=1", "--verbose=0",
                           "--metrics_json=" + metrics}});
  for (const auto& r : cluster.Run()) {
    INFO(r.output);
    CHECK(r.exit_code == 0);
  }
  std::ifstream in(metrics);
  std::stringstream text;
  text << in.rdbuf();
  INFO(text.str());
  CHECK(text.str().find("\"train_examples_per_epoch\": 60000") != std::string::npos);
  CHECK(text.str().find("\"train_examples\": 60000") != std::string::npos);
}

TEST_CASE("bfloat16 training runs and stays in sync", "[train]") {
  ProcessCluster cluster(
      {kTrain,
       2,
       false,
       {"--epochs=1", "--steps_per_epoch=30", "--precision=bfloat16", "--verbose=0"}});
  std::vector<SubprocessResult> results = cluster.Run();
  for (const auto& r : results) {
    INFO(r.output);
    CHECK(r.exit_code == 0);
  }
  CHECK(Fingerprints(results).size() == 1);
}

double TestAccuracy(const std::string& metrics_path) {
  std::ifstream in(metrics_path);
  const nlohmann::json metrics = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!metrics.is_object() || !metrics.contains("test_accuracy")) return -1;
  return metrics["test_accuracy"].get<double>();
}

TEST_CASE("gradients compressed to bfloat16 train as well as float32, replicas identical",
          "[train]") {
  // The bar: MLP on Fashion-MNIST, 10 epochs, within 0.5 points of float32.
  std::map<std::string, double> accuracy;
  for (const std::string compression : {"none", "bf16"}) {
    const std::string metrics = TempPath("metrics_" + compression + ".json");
    ProcessCluster cluster({kTrain,
                            2,
                            false,
                            {"--epochs=10", "--verbose=0", "--allreduce_compression=" + compression,
                             "--metrics_json=" + metrics}});
    std::vector<SubprocessResult> results = cluster.Run();
    for (const auto& r : results) {
      INFO(r.output);
      REQUIRE(r.exit_code == 0);
    }
    CHECK(Fingerprints(results).size() == 1);  // Bit-identical weights on both workers.
    accuracy[compression] = TestAccuracy(metrics);
  }
  INFO("test accuracy: float32 " << accuracy["none"] << ", bfloat16 gradients "
                                 << accuracy["bf16"]);
  CHECK(accuracy["none"] > 0.85);
  CHECK(std::fabs(accuracy["bf16"] - accuracy["none"]) <= 0.005);
}

TEST_CASE("a schedule, clipping, early stopping and a CSV log from flags, replicas identical",
          "[train]") {
  const std::string csv = TempPath("train_log.csv");
  std::remove(csv.c_str());
  ProcessCluster cluster(
      {kTrain,
       2,
       false,
       {"--epochs=8", "--steps_per_epoch=20", "--validate_each_epoch", "--lr_schedule=cosine",
        "--lr_warmup_steps=30", "--global_clipnorm=1", "--early_stopping_patience=0",
        "--terminate_on_nan", "--csv_log=" + csv}});
  std::vector<SubprocessResult> results = cluster.Run();
  for (const auto& r : results) {
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  }
  CHECK(Fingerprints(results).size() == 1);
  int epochs = 0;
  for (int e = 1; e <= 8; ++e)
    epochs += results[0].output.find("Epoch " + std::to_string(e) + "/8") != std::string::npos;
  std::ifstream in(csv);
  std::vector<std::string> rows;
  for (std::string line; std::getline(in, line);) rows.push_back(line);
  INFO(results[0].output);
  REQUIRE(rows.size() == static_cast<size_t>(epochs) + 1);
  CHECK(rows[0].find("epoch,accuracy,learning_rate,loss,") == 0);
  // After 20 of the 30 warmup steps the rate is 2/3 of --learning_rate's 0.001.
  CHECK(rows[1].find(",0.00066666") != std::string::npos);
}

TEST_CASE(
    "the residual network with SyncBatchNormalization trains on 2 workers, replicas identical",
    "[train]") {
  const std::string csv = TempPath("resnet_log.csv");
  std::remove(csv.c_str());
  ProcessCluster cluster({kTrain,
                          2,
                          false,
                          {"--model=resnet", "--sync_batch_norm", "--dataset=synthetic",
                           "--synthetic_examples=1000", "--epochs=2", "--steps_per_epoch=3",
                           "--global_batch_size=64", "--verbose=0", "--csv_log=" + csv}});
  std::vector<SubprocessResult> results = cluster.Run();
  for (const auto& r : results) {
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  }
  CHECK(Fingerprints(results).size() == 1);  // Moving statistics included.
  // The model's default schedule: cosine from 0.002 to 0 over the run's 6 steps,
  // so 0.001 after the first epoch's 3.
  std::ifstream in(csv);
  std::vector<std::string> rows;
  for (std::string line; std::getline(in, line);) rows.push_back(line);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].find("epoch,accuracy,learning_rate,loss") == 0);
  CHECK(rows[1].find(",0.001") != std::string::npos);
  CHECK(rows[1].find(",0.002") == std::string::npos);
}

// Trains on 2 workers with `args` (and --verbose=0): both exit 0 with one weights
// fingerprint; returns the chief's metrics JSON (--metrics_json, named after `name`).
nlohmann::json TrainTwoWorkers(const std::string& name, std::vector<std::string> args) {
  const std::string metrics = TempPath(name + ".json");
  args.push_back("--verbose=0");
  args.push_back("--metrics_json=" + metrics);
  ProcessCluster cluster({kTrain, 2, false, args});
  std::vector<SubprocessResult> results = cluster.Run();
  for (const auto& r : results) {
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  }
  CHECK(Fingerprints(results).size() == 1);
  std::ifstream in(metrics);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  REQUIRE(j.is_object());
  return j;
}

TEST_CASE(
    "Wide & Deep on the synthetic click log: AUC next to the best achievable, replicas identical",
    "[train]") {
  const nlohmann::json j = TrainTwoWorkers(
      "wide_deep",
      {"--model=wide_deep", "--dataset=synthetic_clicks", "--clicks_examples=40000", "--epochs=3"});
  INFO(j.dump());
  const double auc = j.value("test_auc", -1.0), best = j.value("bayes_auc", -1.0);
  CHECK(best > 0.75);
  CHECK(auc > 0.65);         // Learned the clicks...
  CHECK(auc < best + 0.02);  // ...not better than the truth (up to AUC's thresholds).
}

TEST_CASE(
    "sequence models on synthetic_sequences with train's defaults: LSTM, GRU and a transformer "
    "reach 0.95 of the "
    "best achievable accuracy, an order-blind bag of embeddings stays below 0.85 of it",
    "[train]") {
  for (const std::string model : {"lstm", "gru", "transformer", "bag_of_embeddings"}) {
    INFO(model);
    const nlohmann::json j = TrainTwoWorkers(model + "_sequences",
                                             {"--model=" + model, "--dataset=synthetic_sequences"});
    INFO(j.dump());
    const double accuracy = j.value("test_accuracy", -1.0), best = j.value("bayes_accuracy", -1.0);
    CHECK(best > 0.85);  // 1 - noise (0.1), up to the test labels drawn.
    if (model == "bag_of_embeddings") {
      CHECK(accuracy < 0.85 * best);
    } else {
      CHECK(accuracy >= 0.95 * best);
    }
  }
}

TEST_CASE(
    "workers that disagree on the gradient compression or the collective algorithm stop before "
    "training (exit 7)",
    "[train]") {
  const std::pair<std::string, std::string> cases[] = {
      {"--allreduce_compression=bf16", "gradient all-reduce compression: "},
      {"--allreduce_algorithm=recursive_doubling", "collective algorithm: "},
  };
  for (const auto& [flag, line] : cases) {
    ProcessCluster cluster(
        {kTrain, 2, false, {"--epochs=1", "--steps_per_epoch=5", "--verbose=0"}});
    cluster.AddArgs(1, {flag});
    std::vector<SubprocessResult> results = cluster.Run();
    for (const auto& r : results) {
      INFO(flag << "\n" << r.output);
      CHECK(r.exit_code == 7);
      CHECK(r.output.find(line) != std::string::npos);
    }
  }
}

TEST_CASE("a worker killed mid-training makes the others exit 3 promptly", "[train]") {
  ProcessCluster cluster({kTrain, 3, false, {}});
  std::vector<std::unique_ptr<Subprocess>> processes;
  for (int i = 0; i < 3; ++i) {
    Subprocess::Options options;
    options.env["TF_CONFIG"] = cluster.tf_config(i);
    options.timeout_s = 120;
    processes.push_back(std::make_unique<Subprocess>(
        Subprocess::Start({kTrain, "--dataset=synthetic", "--epochs=1000", "--verbose=0",
                           "--global_batch_size=240", "--collective_timeout_s=120"},
                          options)));
  }
  std::this_thread::sleep_for(std::chrono::seconds(4));
  const double killed_at = MonotonicSeconds();
  processes[1]->Signal(SIGKILL);
  for (int i : {0, 2}) {
    SubprocessResult r = processes[i]->Wait();
    INFO(r.output);
    CHECK(r.exit_code == 3);
    CHECK(MonotonicSeconds() - killed_at < 15);
    CHECK(r.output.find("worker:1 (" + cluster.address(1) + ")") != std::string::npos);
  }
  CHECK(processes[1]->Wait().exit_code == 128 + SIGKILL);
}

TEST_CASE("bad flags fail at once with exit 2", "[train]") {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--model=rnn"},
       "--model=rnn: expected mlp, cnn, resnet, wide_deep, lstm, gru, transformer or "
       "bag_of_embeddings"},
      {{"--dataset=imagenet"},
       "--dataset=imagenet: expected fashion_mnist, synthetic, synthetic_clicks or "
       "synthetic_sequences"},
      {{"--model=lstm"},
       "--model=lstm with --dataset=fashion_mnist: wide_deep trains on synthetic_clicks"},
      {{"--dataset=synthetic_sequences", "--model=lstm", "--sequence_steps=3"},
       "--sequence_steps=3, --sequence_vocabulary=50: synthetic_sequences: 3 steps"},
      {{"--data_dir=/nope"},
       "--data_dir=/nope does not exist; install Debian's dataset-fashion-mnist"},
      {{"--optimizer=lamb"}, "unknown optimizer \"lamb\""},
      {{"--precision=fp8"}, "--precision=fp8: expected float32 or bfloat16"},
      {{"--inter_op_threads=-1"},
       "--inter_op_threads=-1: expected 0 (choose from the cores), 1, or 2 and more"},
      {{"--allreduce_compression=fp16"},
       "--allreduce_compression=fp16: gradient compression \"fp16\": expected none or bf16"},
      {{"--epochs=many"}, "flag --epochs: expected an integer, got \"many\""},
      {{"--sync_batch_norm"}, "--sync_batch_norm is for --model=resnet, not mlp"},
      {{"--model=wide_deep"},
       "--model=wide_deep with --dataset=fashion_mnist: wide_deep trains on synthetic_clicks"},
      {{"--lr_schedule=step"},
       "--lr_schedule=step: expected none, exponential, cosine or piecewise"},
      {{"--lr_schedule=piecewise", "--lr_boundaries=100", "--lr_values=0.01"},
       "--lr_schedule=piecewise: PiecewiseConstantDecay: 1 boundaries need 2 values, got 1"},
      {{"--lr_schedule=piecewise", "--lr_boundaries=1x"},
       "--lr_boundaries=1x: \"1x\" is not a number"},
      {{"--lr_schedule=cosine", "--reduce_lr_patience=2"},
       "--reduce_lr_patience=2 changes the learning rate, but --lr_schedule=cosine sets it"},
      {{"--clipnorm=1", "--global_clipnorm=1"},
       "clipnorm, global_clipnorm and clipvalue cannot be combined"},
  };
  for (const Case& c : cases) {
    Subprocess::Options options;
    options.unset_env = {"TF_CONFIG"};
    options.timeout_s = 30;
    std::vector<std::string> argv = {kTrain};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    SubprocessResult r = RunSubprocess(argv, options);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(c.message) != std::string::npos);
  }
  // A global batch smaller than the workers.
  ProcessCluster cluster({kTrain, 3, false, {"--global_batch_size=2", "--dataset=synthetic"}});
  std::vector<SubprocessResult> results = cluster.Run();
  for (const auto& r : results) {
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("--global_batch_size=2: at least one example per replica") !=
          std::string::npos);
  }
}

TEST_CASE("the default global batch of 256 on 3 workers: 86, 85, 85, every example once",
          "[train]") {
  const std::string metrics = TempPath("metrics_uneven.json");
  ProcessCluster cluster({kTrain,
                          3,
                          false,
                          {"--dataset=synthetic", "--synthetic_examples=2000", "--epochs=2",
                           "--verbose=0", "--metrics_json=" + metrics}});
  for (const auto& r : cluster.Run()) {
    INFO(r.output);
    CHECK(r.exit_code == 0);
  }
  std::ifstream in(metrics);
  std::stringstream text;
  text << in.rdbuf();
  INFO(text.str());
  CHECK(text.str().find("\"train_examples_per_epoch\": 2000") != std::string::npos);
  CHECK(text.str().find("\"global_batch_size\": 256") != std::string::npos);
}

}  // namespace
}  // namespace ringwork
