// Elastic training on localhost clusters of real `train` processes (--min_workers):
// a worker killed (SIGKILL, from RINGWORK_CRASH_AT: in an all-reduce, or the chief
// during a checkpoint write) leaves the others training to the end with one
// fingerprint; a stopped worker is left behind and, when it resumes, is fenced
// (exit 3, it lost the quorum); a group that keeps half of the cluster or less
// stops (exit 3) instead of training apart.
#include <signal.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <regex>
#include <set>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "checkpoint/checkpoint_directory.h"
#include "checkpoint/checkpoint_file.h"
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
std::vector<std::string> TrainArgs(int64_t epochs, int min_workers) {
  return {"--dataset=synthetic", "--synthetic_examples=4096", "--global_batch_size=120",
          absl::StrCat("--epochs=", epochs), "--verbose=0", "--intra_op_threads=1",
          absl::StrCat("--min_workers=", min_workers)};
}

std::vector<std::string> Fingerprints(const std::string& output) {
  std::vector<std::string> found;
  const std::regex pattern("weights fingerprint ([0-9a-f]{16})");
  for (auto it = std::sregex_iterator(output.begin(), output.end(), pattern);
       it != std::sregex_iterator(); ++it) {
    found.push_back((*it)[1]);
  }
  return found;
}

// Seconds since midnight of the first log line (HH:MM:SS.mmm) matching `what`,
// or -1; with `task`, only lines launch prefixed with it.
double LogTime(const std::string& output, const std::string& what, const std::string& task = "") {
  const std::string prefix = task.empty() ? "" : "\\[" + task + "\\] ";
  std::smatch m;
  if (!std::regex_search(output, m, std::regex(prefix + "[IWE] ([0-9]{2}):([0-9]{2}):([0-9.]+) [^\n]*" + what))) {
    return -1;
  }
  return std::stod(m[1]) * 3600 + std::stod(m[2]) * 60 + std::stod(m[3]);
}

// Now as the log lines print it (UTC here: the machines run on UTC).
double LogClockNow() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  localtime_r(&t, &tm);
  const double fraction =
      std::chrono::duration<double>(now.time_since_epoch()).count() - static_cast<double>(t);
  return tm.tm_hour * 3600 + tm.tm_min * 60 + tm.tm_sec + fraction;
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

TEST_CASE("4 workers, worker 2 killed in an all-reduce: 3 go on at once and finish alike, "
          "every example trained once per epoch", "[elastic]") {
  const std::string dir = FreshTestDir("elastic_kill");
  std::vector<std::string> argv = {kLaunch, "--num_workers=4", "--elastic", "--", kTrain};
  for (const std::string& a : TrainArgs(4, 2)) argv.push_back(a);
  argv.push_back("--metrics_json=" + dir + "/metrics.json");
  Subprocess::Options options;
  options.env["RINGWORK_CRASH_AT"] = "allreduce#100@worker:2";
  options.timeout_s = kGuardS;
  const SubprocessResult r = Subprocess::Start(argv, options).Wait();
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_FALSE(r.timed_out);
  const double crashed = LogTime(r.output, "crash point", "worker:2");
  REQUIRE(crashed >= 0);
  for (const std::string task : {"worker:0", "worker:1", "worker:3"}) {
    INFO(task);
    const double resumed = LogTime(r.output, "generation 1: worker:2 \\(127\\.0\\.0\\.1:[0-9]+\\) left", task);
    REQUIRE(resumed >= 0);
    CHECK(resumed - crashed <= kRegroupBoundS);
  }
  const std::vector<std::string> fingerprints = Fingerprints(r.output);
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

TEST_CASE("3 workers, the chief killed (in an all-reduce, or writing a checkpoint): worker 1 "
          "takes over the checkpoints and the metrics", "[elastic]") {
  for (const std::string crash_at : {"allreduce#60@worker:0", "checkpoint_write#2@worker:0"}) {
    INFO(crash_at);
    const std::string dir = FreshTestDir("elastic_chief");
    std::vector<std::string> argv = {kLaunch, "--num_workers=3", "--elastic", "--", kTrain};
    for (const std::string& a : TrainArgs(3, 2)) argv.push_back(a);
    argv.insert(argv.end(), {"--metrics_json=" + dir + "/metrics.json", "--checkpoint_dir=" + dir + "/ckpt",
                             "--checkpoint_freq_steps=8"});
    Subprocess::Options options;
    options.env["RINGWORK_CRASH_AT"] = crash_at;
    options.timeout_s = kGuardS;
    const SubprocessResult r = Subprocess::Start(argv, options).Wait();
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(LogTime(r.output, "crash point", "worker:0") >= 0);
    CHECK(LogTime(r.output, "this worker is the chief now", "worker:1") >= 0);
    const std::vector<std::string> fingerprints = Fingerprints(r.output);
    REQUIRE(fingerprints.size() == 2);
    CHECK(fingerprints[0] == fingerprints[1]);
    const nlohmann::json metrics = ReadJson(dir + "/metrics.json");
    CHECK(metrics["generations"] == 1);
    CHECK(metrics["num_workers"] == 2);
    // The new chief wrote the final checkpoint (3 epochs of 35 steps), whole.
    absl::StatusOr<std::string> latest = LatestCheckpoint(dir + "/ckpt");
    REQUIRE(latest.ok());
    CHECK(*latest == dir + "/ckpt/" + CheckpointFileName(105));
    absl::StatusOr<std::unique_ptr<CheckpointReader>> reader = CheckpointReader::Open(*latest);
    INFO(reader.status().message());
    CHECK(reader.ok());
  }
}

// Starts `n` workers (each its own process), then after `signal_after_s` sends
// `signal` to each of `victims` at once.
struct Job {
  std::unique_ptr<ProcessCluster> cluster;
  std::vector<std::unique_ptr<Subprocess>> workers;
};

Job StartJob(int n, int64_t epochs, int min_workers) {
  Job job;
  job.cluster = std::make_unique<ProcessCluster>(
      ProcessCluster::Options{kTrain, n, false, TrainArgs(epochs, min_workers), {}, kGuardS});
  for (int i = 0; i < n; ++i) {
    Subprocess::Options options;
    options.env["TF_CONFIG"] = job.cluster->tf_config(i);
    options.timeout_s = kGuardS;
    std::vector<std::string> argv = {kTrain};
    for (const std::string& a : TrainArgs(epochs, min_workers)) argv.push_back(a);
    job.workers.push_back(std::make_unique<Subprocess>(Subprocess::Start(argv, options)));
  }
  return job;
}

TEST_CASE("3 workers, worker 1 stopped past the detection bound: 2 go on; resumed, it is "
          "fenced and exits 3", "[elastic]") {
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
    const double resumed = LogTime(r.output, "generation 1: worker:1 \\(");
    REQUIRE(resumed >= 0);
    CHECK(resumed - stopped <= kDetectionS + kRegroupBoundS);
    CHECK(Fingerprints(r.output).size() == 1);
  }
  INFO("worker 1:\n" << fenced.output);
  CHECK(fenced.exit_code == 3);
  CHECK(fenced.output.find("lost the quorum") != std::string::npos);
  CHECK(Fingerprints(fenced.output).empty());
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
        CHECK(r.output.find("lost the quorum: at generation 1 only 2 of the 4 workers") != std::string::npos);
        CHECK(Fingerprints(r.output).empty());
      } else {
        CHECK(r.exit_code == 0);
        CHECK(r.output.find("3 of 5 workers go on") != std::string::npos);
        for (const std::string& f : Fingerprints(r.output)) fingerprints.insert(f);
      }
    }
    if (n == 5) CHECK(fingerprints.size() == 1);
  }
}

}  // namespace
}  // namespace ringwork
