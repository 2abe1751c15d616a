// Elastic training on localhost clusters of real `train` processes (--min_workers):
// a worker killed (SIGKILL, from RINGWORK_CRASH_AT: in an all-reduce, or the chief
// during a checkpoint write) leaves the others training to the end with one
// fingerprint; a stopped worker is left behind and, when it resumes, is fenced
// (exit 3, it lost the quorum); a group that keeps half of the cluster or less
// stops (exit 3) instead of training apart. Over files: elastic_files_cluster_test.
#include <signal.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "checkpoint/checkpoint_directory.h"
#include "checkpoint/checkpoint_file.h"
#include "testing/checkpoint_tensors.h"
#include "testing/log_lines.h"
#include "testing/process_cluster.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

constexpr char kTrain[] = "tools/train";
constexpr char kLaunch[] = "tools/launch/launch";
constexpr double kGuardS = 120;  // Per process; reaching it is a failure.
// Survivors go on within the detection bound + this (the issue's bar).
constexpr double kRegroupBoundS = 2.0;
// Default heartbeats: 1 s x 5 misses.
constexpr double kDetectionS = 5.1;

// MLP on the synthetic images: 35 steps of 120 per epoch (the last one of 16);
// 120 splits evenly over 3, 4 and 5 workers.
// --inter_op_threads=1: one gradient all-reduce per step on any machine (with an
// overlap thread they go pack by pack), so RINGWORK_CRASH_AT counts land alike.
std::vector<std::string> TrainArgs(int64_t epochs, int min_workers) {
  return {"--dataset=synthetic",
          "--synthetic_examples=4096",
          "--global_batch_size=120",
          absl::StrCat("--epochs=", epochs),
          "--verbose=0",
          "--intra_op_threads=1",
          "--inter_op_threads=1",
          absl::StrCat("--min_workers=", min_workers)};
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

TEST_CASE(
    "4 workers; worker 2 killed in an all-reduce: 3 go on at once and finish alike; "
    "every example trained once per epoch",
    "[elastic]") {
  const std::string dir = FreshTestDir("elastic_kill");
  std::vector<std::string> argv = {kLaunch, "--num_workers=4", "--elastic", "--", kTrain};
  for (const std::string& a : TrainArgs(4, 2)) argv.push_back(a);
  argv.push_back("--metrics_json=" + dir + "/metrics.json");
  Subprocess::Options options;
  options.env["RINGWORK_CRASH_AT"] = "allreduce#50@worker:2";
  options.timeout_s = kGuardS;
  const SubprocessResult r = Subprocess::Start(argv, options).Wait();
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_FALSE(r.timed_out);
  const double crashed = LogLineTime(r.output, "crash point", "worker:2");
  REQUIRE(crashed >= 0);
  for (const std::string task : {"worker:0", "worker:1", "worker:3"}) {
    INFO(task);
    const double resumed =
        LogLineTime(r.output, "generation 1: worker:2 \\(127\\.0\\.0\\.1:[0-9]+\\) left", task);
    REQUIRE(resumed >= 0);
    CHECK(resumed - crashed <= kRegroupBoundS);
  }
  const std::vector<std::string> fingerprints = WeightsFingerprints(r.output);
  REQUIRE(fingerprints.size() == 3);
  CHECK(std::set<std::string>(fingerprints.begin(), fingerprints.end()).size() == 1);
  const nlohmann::json metrics = ReadJson(dir + "/metrics.json");
  CHECK(metrics["generations"] == 1);
  CHECK(metrics["num_workers"] == 3);
  CHECK(metrics["steps_lost"] == 1);  // Every worker was in the step it died in.
  // No example skipped or trained twice: 4 epochs of 4096.
  CHECK(metrics["train_examples"] == 4 * 4096);
  CHECK(metrics["train_examples_per_epoch"] == 4096);
}

TEST_CASE(
    "3 workers; the chief killed (in an all-reduce or writing a checkpoint): worker 1 "
    "takes over the checkpoints, the CSV log and the metrics",
    "[elastic]") {
  for (const std::string crash_at : {"allreduce#30@worker:0", "checkpoint_write#2@worker:0"}) {
    INFO(crash_at);
    const std::string dir = FreshTestDir("elastic_chief");
    std::vector<std::string> argv = {kLaunch, "--num_workers=3", "--elastic", "--", kTrain};
    for (const std::string& a : TrainArgs(3, 2)) argv.push_back(a);
    argv.insert(argv.end(),
                {"--metrics_json=" + dir + "/metrics.json", "--checkpoint_dir=" + dir + "/ckpt",
                 "--checkpoint_freq_steps=8", "--csv_log=" + dir + "/log.csv"});
    Subprocess::Options options;
    options.env["RINGWORK_CRASH_AT"] = crash_at;
    options.timeout_s = kGuardS;
    const SubprocessResult r = Subprocess::Start(argv, options).Wait();
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(LogLineTime(r.output, "crash point", "worker:0") >= 0);
    CHECK(LogLineTime(r.output, "this worker is the chief now", "worker:1") >= 0);
    const std::vector<std::string> fingerprints = WeightsFingerprints(r.output);
    REQUIRE(fingerprints.size() == 2);
    CHECK(fingerprints[0] == fingerprints[1]);
    const nlohmann::json metrics = ReadJson(dir + "/metrics.json");
    CHECK(metrics["generations"] == 1);
    CHECK(metrics["num_workers"] == 2);
    // The chief died in epoch 1: the new one wrote every epoch's row.
    std::ifstream csv(dir + "/log.csv");
    std::string line;
    std::vector<std::string> epochs;
    while (std::getline(csv, line)) epochs.push_back(line.substr(0, line.find(',')));
    CHECK(epochs == std::vector<std::string>{"epoch", "0", "1", "2"});
    // The new chief wrote the final checkpoint (3 epochs of 35 steps), whole.
    absl::StatusOr<std::string> latest = LatestCheckpoint(dir + "/ckpt");
    REQUIRE(latest.ok());
    CHECK(*latest == dir + "/ckpt/" + CheckpointFileName(105));
    absl::StatusOr<std::unique_ptr<CheckpointReader>> reader = CheckpointReader::Open(*latest);
    INFO(reader.status().message());
    CHECK(reader.ok());
  }
}

// `n` workers of `train`, each its own process (the test signals them).
struct Job {
  std::unique_ptr<ProcessCluster> cluster;
  std::vector<std::unique_ptr<Subprocess>> workers;
};

Job StartJob(int n, int64_t epochs, int min_workers, const std::vector<std::string>& extra = {}) {
  Job job;
  std::vector<std::string> args = TrainArgs(epochs, min_workers);
  args.insert(args.end(), extra.begin(), extra.end());
  job.cluster = std::make_unique<ProcessCluster>(
      ProcessCluster::Options{kTrain, n, false, args, {}, kGuardS});
  for (int i = 0; i < n; ++i) {
    Subprocess::Options options;
    options.env["TF_CONFIG"] = job.cluster->tf_config(i);
    options.timeout_s = kGuardS;
    std::vector<std::string> argv = {kTrain};
    for (const std::string& a : args) argv.push_back(a);
    job.workers.push_back(std::make_unique<Subprocess>(Subprocess::Start(argv, options)));
  }
  return job;
}

SubprocessResult Launch(int workers, bool elastic, const std::vector<std::string>& train_args,
                        const std::map<std::string, std::string>& env = {}) {
  std::vector<std::string> argv = {kLaunch, absl::StrCat("--num_workers=", workers)};
  if (elastic) argv.push_back("--elastic");
  argv.insert(argv.end(), {"--", kTrain});
  argv.insert(argv.end(), train_args.begin(), train_args.end());
  Subprocess::Options options;
  options.env = env;
  options.timeout_s = kGuardS;
  return Subprocess::Start(argv, options).Wait();
}

TEST_CASE(
    "a worker dies in the small all-reduce that ends an epoch's begin or end: the one "
    "left behind takes the state of one further on and all finish alike",
    "[elastic]") {
  // allreduce_round#K: worker 3 dies after the first round of its K-th recursive-
  // doubling all-reduce (4 ranks: 0 and 2 complete it, 1 does not). With these
  // flags K = 7 is epoch 1's begin (the chief's decisions), 45 the end's decisions,
  // 46 epoch 2's begin (6 small all-reduces open fit; each step has one, the first
  // step one more: the gradient reducer's agreement on its packing).
  struct Case {
    int k;
    std::string at;  // Where the survivors go on.
  };
  std::set<std::string> after_epoch_one;
  for (const Case& c : {Case{7, "at epoch 1, step 1 (0 steps done"},
                        Case{45, "at epoch 2, its begin (35 steps done"},
                        Case{46, "at epoch 2, step 1 (35 steps done"}}) {
    INFO("allreduce_round#" << c.k);
    const std::string dir = FreshTestDir("elastic_behind");
    std::vector<std::string> args = TrainArgs(3, 2);
    args.push_back("--metrics_json=" + dir + "/metrics.json");
    const SubprocessResult r = Launch(
        4, true, args, {{"RINGWORK_CRASH_AT", absl::StrCat("allreduce_round#", c.k, "@worker:3")}});
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find(c.at + "; this worker takes the state of one further on)") !=
          std::string::npos);
    const std::vector<std::string> fingerprints = WeightsFingerprints(r.output);
    REQUIRE(fingerprints.size() == 3);
    CHECK(std::set<std::string>(fingerprints.begin(), fingerprints.end()).size() == 1);
    if (c.k != 7) after_epoch_one.insert(fingerprints[0]);
    const nlohmann::json metrics = ReadJson(dir + "/metrics.json");
    CHECK(metrics["train_examples"] == 3 * 4096);
  }
  // Three workers from step 35 on, whichever part of the epoch's end failed.
  CHECK(after_epoch_one.size() == 1);
}

// B: 4 workers run `args` (their checkpoint directory DIR/b) and keep a
// checkpoint after `d` steps; then 3 workers run `resumed_args` from a backup of
// it (their checkpoints elsewhere).
void ResumeOnThreeWorkers(const std::string& dir, int64_t d, std::vector<std::string> args,
                          std::vector<std::string> resumed_args) {
  args.push_back(absl::StrCat("--checkpoint_freq_steps=", d));
  const SubprocessResult b = Launch(4, false, args);
  INFO(b.output);
  REQUIRE(b.exit_code == 0);
  const std::string backup = dir + "/backup";
  REQUIRE(MakeBackupOf(dir + "/b/" + CheckpointFileName(d), backup).ok());
  resumed_args.push_back("--backup_dir=" + backup);
  const SubprocessResult b3 = Launch(3, false, resumed_args);
  INFO(b3.output);
  REQUIRE(b3.exit_code == 0);
  REQUIRE(b3.output.find(absl::StrCat("(", d, " steps done)")) != std::string::npos);
}

// The largest difference between the weights of the latest checkpoints of two
// runs (of the test's MLP).
double LargestDifferenceOfLatest(const std::string& dir_a, const std::string& dir_b) {
  const absl::StatusOr<CheckpointTensors> a = LatestCheckpointTensors(dir_a);
  const absl::StatusOr<CheckpointTensors> b = LatestCheckpointTensors(dir_b);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(a->count("dense/kernel") == 1);
  return LargestDifference(*a, *b);
}

TEST_CASE(
    "a run that shrank from 4 workers to 3 equals (up to summation order) one resumed "
    "on 3 workers from a checkpoint at the same step",
    "[elastic]") {
  const std::string dir = FreshTestDir("elastic_equal");
  // A: worker 3 dies; the others go on after D steps.
  std::vector<std::string> args = TrainArgs(2, 2);
  args.push_back("--checkpoint_dir=" + dir + "/a");
  const SubprocessResult a =
      Launch(4, true, args, {{"RINGWORK_CRASH_AT", "allreduce#20@worker:3"}});
  INFO(a.output);
  REQUIRE(a.exit_code == 0);
  std::smatch m;
  REQUIRE(std::regex_search(a.output, m, std::regex("generation 1: [^\n]*\\(([0-9]+) steps done")));
  const int64_t d = std::stoll(m[1]);
  REQUIRE(d > 0);
  REQUIRE(d < 70);
  // B: 4 workers keep a checkpoint at step D; 3 workers resume from it.
  args = TrainArgs(2, 0);
  args.insert(args.end(), {"--checkpoint_dir=" + dir + "/b", "--keep_checkpoints=100"});
  std::vector<std::string> resumed_args = TrainArgs(2, 0);
  resumed_args.push_back("--checkpoint_dir=" + dir + "/b3");
  ResumeOnThreeWorkers(dir, d, args, resumed_args);
  // The same steps on the same examples from the same state: only the order of
  // each step's sums differs (blocks against strided shards).
  const double worst = LargestDifferenceOfLatest(dir + "/a", dir + "/b3");
  INFO("largest difference " << worst);
  CHECK(worst >= 0);
  CHECK(worst <= 1e-5);
  CHECK(worst > 0);  // Not the same run: the summation orders differ.
}

// --elastic_batch=per_replica: each worker keeps 30 examples per step, so after
// worker 3 dies the global batch is 90 and the learning rate x 3/4 (the linear
// scaling rule), and the epoch takes the steps 90 a step needs.
std::vector<std::string> PerReplicaArgs(int global_batch, const std::string& dir) {
  return {"--dataset=synthetic", "--synthetic_examples=4096",
          absl::StrCat("--global_batch_size=", global_batch), "--epochs=2", "--verbose=0",
          "--intra_op_threads=1", "--inter_op_threads=1", "--min_workers=2",
          "--elastic_batch=per_replica", "--checkpoint_dir=" + dir, "--keep_checkpoints=100",
          // A constant rate that checkpoints do not keep (a schedule sets it), so
          // that the resumed run below can start at 3/4 of it.
          "--lr_schedule=exponential", "--lr_decay_rate=1"};
}

TEST_CASE(
    "with a per-replica batch a run that shrank from 4 workers to 3 trains every example "
    "once per epoch and equals one resumed on 3 workers of batch 30 at the same example",
    "[elastic]") {
  const std::string dir = FreshTestDir("elastic_per_replica");
  // A: worker 3 dies in epoch 1; the others go on with a global batch of 90.
  std::vector<std::string> args = PerReplicaArgs(120, dir + "/a");
  args.insert(args.end(), {"--metrics_json=" + dir + "/a.json", "--checkpoint_freq_steps=25"});
  const SubprocessResult a =
      Launch(4, true, args, {{"RINGWORK_CRASH_AT", "allreduce#20@worker:3"}});
  INFO(a.output);
  REQUIRE(a.exit_code == 0);
  std::smatch m;
  REQUIRE(
      std::regex_search(a.output, m,
                        std::regex("generation 1: [^\n]*\\(([0-9]+) steps done\\); global "
                                   "batch 90, learning rate x 3/4, ([0-9]+) steps in this epoch")));
  const int64_t d = std::stoll(m[1]);
  REQUIRE(d > 0);
  REQUIRE(d < 34);  // Inside epoch 1 (35 steps of 120).
  // The rest of the epoch's 4096 examples in steps of 90.
  CHECK(std::stoll(m[2]) == d + (4096 - 120 * d + 89) / 90);
  const nlohmann::json metrics = ReadJson(dir + "/a.json");
  CHECK(metrics["num_workers"] == 3);
  CHECK(metrics["train_examples"] == 2 * 4096);
  CHECK(metrics["train_examples_per_epoch"] == 4096);
  // B: 4 workers keep a checkpoint after D steps (it records the example reached);
  // 3 workers with a global batch of 90 resume from it.
  std::vector<std::string> resumed_args = PerReplicaArgs(90, dir + "/b3");
  resumed_args.push_back("--learning_rate=0.00075");
  ResumeOnThreeWorkers(dir, d, PerReplicaArgs(120, dir + "/b"), resumed_args);
  // The same examples in the same blocks at every step from the same state:
  // equal up to the learning rate's last bit (0.001f x 0.75f against 0.00075f).
  const double worst = LargestDifferenceOfLatest(dir + "/a", dir + "/b3");
  INFO("largest difference " << worst);
  CHECK(worst >= 0);
  CHECK(worst <= 1e-5);
  // A's checkpoint after 25 steps (6 of them in steps of 90) records the example
  // reached: a run with a global batch refuses it (its steps would name other
  // examples); a per-replica run resumes there.
  REQUIRE(d < 25);
  REQUIRE(MakeBackupOf(dir + "/a/" + CheckpointFileName(25), dir + "/backup25").ok());
  std::vector<std::string> global = TrainArgs(2, 2);
  global.push_back("--backup_dir=" + dir + "/backup25");
  const SubprocessResult refused = Launch(4, false, global);
  INFO(refused.output);
  CHECK(refused.exit_code == 7);
  CHECK(refused.output.find("resume it with --elastic_batch=per_replica") != std::string::npos);
  args = PerReplicaArgs(120, dir + "/c");
  args.insert(args.end(),
              {"--backup_dir=" + dir + "/backup25", "--metrics_json=" + dir + "/c.json"});
  const SubprocessResult resumed = Launch(4, false, args);
  INFO(resumed.output);
  CHECK(resumed.exit_code == 0);
  CHECK(resumed.output.find("(25 steps done)") != std::string::npos);
  // From example 120 x D + 90 x (25 - D) on: the rest of epoch 1, then epoch 2.
  CHECK(ReadJson(dir + "/c.json")["train_examples"] == 4096 - (120 * d + 90 * (25 - d)) + 4096);
}

// The column `name` of a CSVLogger file, row by row.
std::vector<std::string> CsvColumn(const std::string& path, const std::string& name) {
  std::ifstream in(path);
  std::string line;
  std::vector<std::string> values;
  int column = -1;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
    if (column < 0) {
      column = static_cast<int>(std::find(cells.begin(), cells.end(), name) - cells.begin());
      REQUIRE(column < static_cast<int>(cells.size()));
    } else {
      REQUIRE(column < static_cast<int>(cells.size()));
      values.push_back(cells[static_cast<size_t>(column)]);
    }
  }
  return values;
}

TEST_CASE(
    "with a per-replica batch a learning rate schedule follows the data: after a shrink "
    "each epoch ends at the rate of an uninterrupted run",
    "[elastic]") {
  const std::string dir = FreshTestDir("elastic_per_replica_schedule");
  std::vector<std::string> args = TrainArgs(2, 2);
  args.insert(args.end(), {"--elastic_batch=per_replica", "--lr_schedule=cosine",
                           "--csv_log=" + dir + "/shrunk.csv"});
  const SubprocessResult shrunk =
      Launch(4, true, args, {{"RINGWORK_CRASH_AT", "allreduce#20@worker:3"}});
  INFO(shrunk.output);
  REQUIRE(shrunk.exit_code == 0);
  REQUIRE(shrunk.output.find("steps in this epoch") != std::string::npos);
  args = TrainArgs(2, 2);
  args.insert(args.end(), {"--elastic_batch=per_replica", "--lr_schedule=cosine",
                           "--csv_log=" + dir + "/whole.csv"});
  const SubprocessResult whole = Launch(4, true, args);
  INFO(whole.output);
  REQUIRE(whole.exit_code == 0);
  // Epoch 1 took 40 steps after the shrink, not 35: the rate at its end is still
  // the schedule's at 35 full-ring steps (and 0 at the end of the run).
  const std::vector<std::string> rates = CsvColumn(dir + "/shrunk.csv", "learning_rate");
  CHECK(rates.size() == 2);
  CHECK(rates == CsvColumn(dir + "/whole.csv", "learning_rate"));
}

TEST_CASE(
    "the chief stopped while it keeps checkpoints: the new chief skips saves while the "
    "old one holds the directory's lock and writes once it exits (fenced)",
    "[elastic]") {
  const std::string dir = FreshTestDir("elastic_stopped_chief");
  std::vector<std::string> extra = {"--checkpoint_dir=" + dir, "--checkpoint_freq_steps=50"};
  // Long enough that the survivors still train when the old chief resumes (they
  // skip their saves meanwhile, which makes them fast: 2 workers, 120 epochs in 2 s).
  constexpr int64_t kEpochs = 400;
  Job job = StartJob(3, kEpochs, 2, extra);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  job.workers[0]->Signal(SIGSTOP);
  std::this_thread::sleep_for(std::chrono::duration<double>(kDetectionS + kRegroupBoundS + 1));
  job.workers[0]->Signal(SIGCONT);
  const SubprocessResult fenced = job.workers[0]->Wait();
  INFO("worker 0:\n" << fenced.output);
  CHECK(fenced.exit_code == 3);
  CHECK(fenced.output.find("lost the quorum") != std::string::npos);
  for (int i : {1, 2}) {
    const SubprocessResult r = job.workers[i]->Wait();
    INFO("worker " << i << ":\n" << r.output);
    CHECK(r.exit_code == 0);
    if (i == 1) {
      CHECK(r.output.find("no checkpoints in " + dir + " yet") != std::string::npos);
      CHECK(r.output.find("this worker is the chief now: it writes the checkpoints in " + dir) !=
            std::string::npos);
    }
  }
  // The final checkpoint (every epoch's 35 steps), by the new chief.
  absl::StatusOr<std::string> latest = LatestCheckpoint(dir);
  REQUIRE(latest.ok());
  CHECK(*latest == dir + "/" + CheckpointFileName(kEpochs * 35));
}

TEST_CASE(
    "3 workers; worker 1 stopped past the detection bound: 2 go on; resumed it "
    "is fenced and exits 3",
    "[elastic]") {
  Job job = StartJob(3, 120, 2);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const double stopped = LogClockNow();
  job.workers[1]->Signal(SIGSTOP);
  // Resume it while the others train in their new ring.
  std::this_thread::sleep_for(std::chrono::duration<double>(kDetectionS + kRegroupBoundS + 1));
  job.workers[1]->Signal(SIGCONT);
  const SubprocessResult fenced = job.workers[1]->Wait();
  for (int i : {0, 2}) {
    const SubprocessResult r = job.workers[i]->Wait();
    INFO("worker " << i << ":\n" << r.output);
    CHECK(r.exit_code == 0);
    const double resumed = LogLineTime(r.output, "generation 1: worker:1 \\(");
    REQUIRE(resumed >= 0);
    CHECK(resumed - stopped <= kDetectionS + kRegroupBoundS);
    CHECK(WeightsFingerprints(r.output).size() == 1);
  }
  INFO("worker 1:\n" << fenced.output);
  CHECK(fenced.exit_code == 3);
  CHECK(fenced.output.find("lost the quorum") != std::string::npos);
  CHECK(WeightsFingerprints(fenced.output).empty());
}

TEST_CASE("2 of 4 workers killed: the other 2 are no majority and exit 3; 2 of 5: 3 go on",
          "[elastic]") {
  for (const int n : {4, 5}) {
    INFO(n << " workers");
    Job job = StartJob(n, 120, 2);
    std::this_thread::sleep_for(std::chrono::seconds(3));
    job.workers[1]->Signal(SIGKILL);
    job.workers[2]->Signal(SIGKILL);
    std::set<std::string> fingerprints;
    for (int i = 0; i < n; ++i) {
      const SubprocessResult r = job.workers[i]->Wait();
      if (i == 1 || i == 2) continue;
      INFO("worker " << i << ":\n" << r.output);
      CHECK_FALSE(r.timed_out);
      if (n == 4) {
        CHECK(r.exit_code == 3);
        CHECK(r.output.find("lost the quorum: at generation 1 only 2 of the 4 workers") !=
              std::string::npos);
        CHECK(WeightsFingerprints(r.output).empty());
      } else {
        CHECK(r.exit_code == 0);
        CHECK(r.output.find("3 of 5 workers go on") != std::string::npos);
        for (const std::string& f : WeightsFingerprints(r.output)) fingerprints.insert(f);
      }
    }
    if (n == 5) CHECK(fingerprints.size() == 1);
  }
}

TEST_CASE(
    "4 workers; worker 1 dies as the evaluation after training starts: the other 3 "
    "evaluate again and the job succeeds",
    "[elastic]") {
  const std::string dir = FreshTestDir("elastic_evaluate");
  std::vector<std::string> args = TrainArgs(2, 2);
  args.push_back("--metrics_json=" + dir + "/metrics.json");
  const SubprocessResult r =
      Launch(4, true, args, {{"RINGWORK_CRASH_AT", "final_evaluate@worker:1"}});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  REQUIRE(LogLineTime(r.output, "crash point final_evaluate", "worker:1") >= 0);
  for (const std::string task : {"worker:0", "worker:2", "worker:3"}) {
    INFO(task);
    CHECK(LogLineTime(r.output,
                      "generation 1: worker:1 \\(127\\.0\\.0\\.1:[0-9]+\\) left: .*; 3 of 4 "
                      "workers evaluate again",
                      task) >= 0);
  }
  const std::vector<std::string> fingerprints = WeightsFingerprints(r.output);
  REQUIRE(fingerprints.size() == 3);
  CHECK(std::set<std::string>(fingerprints.begin(), fingerprints.end()).size() == 1);
  const nlohmann::json metrics = ReadJson(dir + "/metrics.json");
  CHECK(metrics["num_workers"] == 3);
  CHECK(metrics["generations"] == 1);
  CHECK(metrics["train_examples"] == 2 * 4096);  // Training had ended, with 4.
}

TEST_CASE(
    "a worker dies in the all-reduce that ends fit: the two that got through it evaluate, "
    "the one that did not learns that training ended, and all three evaluate again",
    "[elastic]") {
  // allreduce_round#84: with these flags (2 epochs: 6 small all-reduces open fit,
  // 38 per epoch, one more in the first step) the agreement that training ended;
  // worker 3 dies after its first
  // round, which ranks 0 and 2 complete and rank 1 does not.
  const std::string dir = FreshTestDir("elastic_fit_end");
  std::vector<std::string> args = TrainArgs(2, 2);
  args.push_back("--metrics_json=" + dir + "/metrics.json");
  const SubprocessResult r =
      Launch(4, true, args, {{"RINGWORK_CRASH_AT", "allreduce_round#84@worker:3"}});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  REQUIRE(LogLineTime(r.output, "crash point allreduce_round", "worker:3") >= 0);
  CHECK(LogLineTime(r.output, "training had ended on another worker", "worker:1") >= 0);
  for (const std::string task : {"worker:0", "worker:2"}) {
    INFO(task);
    CHECK(LogLineTime(r.output, "3 of 4 workers evaluate again", task) >= 0);
  }
  const std::vector<std::string> fingerprints = WeightsFingerprints(r.output);
  REQUIRE(fingerprints.size() == 3);
  CHECK(std::set<std::string>(fingerprints.begin(), fingerprints.end()).size() == 1);
  const nlohmann::json metrics = ReadJson(dir + "/metrics.json");
  CHECK(metrics["num_workers"] == 3);
  CHECK(metrics["train_examples"] == 2 * 4096);
}

}  // namespace
}  // namespace ringwork
