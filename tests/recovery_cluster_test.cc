// Failures of real worker processes and recovery from them, on localhost clusters
// of `train`: each of 4 workers killed (SIGKILL, from RINGWORK_CRASH_AT) at startup,
// during the initial broadcast, in the middle of an all-reduce and during a
// checkpoint write; a group restarted by `launch --max_restarts` resuming from its
// backup to the weights of an uninterrupted run; SIGTERM; corrupt checkpoints; a
// worker with another model. No survivor may hang or die by a signal: every
// process has a deadline, and reaching it fails the test.
#include <signal.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "checkpoint/checkpoint_directory.h"
#include "checkpoint/checkpoint_file.h"
#include "testing/log_lines.h"
#include "testing/process_cluster.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

namespace fs = std::filesystem;

constexpr char kTrain[] = "tools/train";
constexpr char kLaunch[] = "tools/launch/launch";
constexpr double kGuardS = 90;  // Per process; reaching it is a failure.

// A short MLP run: 32 steps per epoch on 4 workers.
// --inter_op_threads=1: one gradient all-reduce per step on any machine (with an
// overlap thread they go pack by pack), so RINGWORK_CRASH_AT counts land alike.
std::vector<std::string> TrainArgs(int64_t epochs) {
  return {"--dataset=synthetic",
          "--synthetic_examples=4096",
          "--global_batch_size=128",
          absl::StrCat("--epochs=", epochs),
          "--verbose=0",
          "--intra_op_threads=1",
          "--inter_op_threads=1"};
}

// Every tensor of the checkpoint `latest` names reads back and verifies.
void CheckLatestIsWhole(const std::string& dir) {
  absl::StatusOr<std::string> latest = LatestCheckpoint(dir);
  INFO(latest.status().message());
  REQUIRE(latest.ok());
  absl::StatusOr<std::unique_ptr<CheckpointReader>> reader = CheckpointReader::Open(*latest);
  INFO(reader.status().message());
  REQUIRE(reader.ok());
  for (const CheckpointTensor& t : (*reader)->manifest().tensors) {
    std::vector<char> bytes(t.bytes);
    absl::Status read = (*reader)->Read(t, bytes.data());
    INFO(read.message());
    CHECK(read.ok());
  }
}

TEST_CASE("each of 4 workers killed at each moment: the others exit 3 or 4, naming it", "[crash]") {
  struct Moment {
    std::string crash_at;  // RINGWORK_CRASH_AT without the task.
    int survivor_code;
  };
  const std::vector<Moment> moments = {
      {"startup", 4},             // Before it joined: the others' startup deadline.
      {"broadcast#2", 3},         // The chief's initial broadcast of the variables.
      {"allreduce#5", 3},         // Half-way through a gradient all-reduce.
      {"checkpoint_write#2", 3},  // The chief writing its second checkpoint.
  };
  for (const Moment& moment : moments) {
    for (int victim = 0; victim < 4; ++victim) {
      const std::string task = absl::StrCat("worker:", victim);
      INFO(moment.crash_at << " @" << task);
      const std::string dir = FreshTestDir("crash_ckpt");
      std::vector<std::string> args = TrainArgs(2);
      args.insert(args.end(),
                  {"--checkpoint_dir=" + dir, "--checkpoint_freq_steps=4", "--startup_timeout_s=6",
                   "--heartbeat_interval_s=0.5", "--heartbeat_misses=4"});
      ProcessCluster cluster(
          {kTrain, 4, false, args, {{"RINGWORK_CRASH_AT", moment.crash_at + "@" + task}}, kGuardS});
      const double start = MonotonicSeconds();
      std::vector<SubprocessResult> results = cluster.Run();
      const std::string victim_name = absl::StrCat(task, " (", cluster.address(victim), ")");
      for (int i = 0; i < 4; ++i) {
        INFO("task " << i << ":\n" << results[i].output);
        CHECK_FALSE(results[i].timed_out);
        if (i == victim) {
          CHECK(results[i].exit_code == 128 + SIGKILL);
          CHECK(results[i].output.find("crash point") != std::string::npos);
          continue;
        }
        CHECK(results[i].exit_code == moment.survivor_code);
        CHECK(results[i].output.find(victim_name) != std::string::npos);
      }
      // Detection is prompt: the startup deadline, or heartbeats (2 s) at most.
      CHECK(MonotonicSeconds() - start < 30);
      if (moment.crash_at.rfind("checkpoint_write", 0) == 0) {
        // The chief died mid-file (or another worker during its write): the
        // newest checkpoint is the previous, whole one.
        CheckLatestIsWhole(dir);
        const std::string latest = *LatestCheckpoint(dir);
        if (victim == 0) {
          CHECK(latest == dir + "/" + CheckpointFileName(4));
        } else {  // The chief may have finished the write the victim died during.
          CHECK((latest == dir + "/" + CheckpointFileName(4) ||
                 latest == dir + "/" + CheckpointFileName(8)));
        }
      }
    }
  }
}

// The fingerprint of the uninterrupted 4-worker run of TrainArgs(epochs).
std::string Uninterrupted(int64_t epochs) {
  std::vector<std::string> argv = {kLaunch, "--num_workers=4", "--", kTrain};
  std::vector<std::string> args = TrainArgs(epochs);
  argv.insert(argv.end(), args.begin(), args.end());
  Subprocess::Options options;
  options.timeout_s = kGuardS;
  SubprocessResult r = RunSubprocess(argv, options);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> prints = WeightsFingerprints(r.output);
  REQUIRE(prints.size() == 4);
  REQUIRE(std::set<std::string>(prints.begin(), prints.end()).size() == 1);
  return prints[0];
}

TEST_CASE("launch --max_restarts resumes from the backup to the uninterrupted weights",
          "[restart]") {
  const std::string expected = Uninterrupted(3);
  // A worker dies mid all-reduce; the chief dies while writing its second backup.
  for (const std::string crash_at : {"allreduce#20@worker:2", "checkpoint_write#2@worker:0"}) {
    INFO(crash_at);
    const std::string backup = FreshTestDir("restart_backup");
    std::vector<std::string> argv = {kLaunch, "--num_workers=4", "--max_restarts=1", "--", kTrain};
    std::vector<std::string> args = TrainArgs(3);
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--backup_dir=" + backup, "--backup_freq_steps=10"});
    Subprocess::Options options;
    options.timeout_s = kGuardS;
    options.env["RINGWORK_CRASH_AT"] = crash_at;
    SubprocessResult r = RunSubprocess(argv, options);
    INFO(r.output);
    CHECK_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("restarting every task (restart 1 of 1)") != std::string::npos);
    CHECK(r.output.find("resuming from the backup in " + backup) != std::string::npos);
    std::vector<std::string> prints = WeightsFingerprints(r.output);
    CHECK(prints == std::vector<std::string>(4, expected));
    // A completed fit removes its backup.
    CHECK(ListCheckpoints(backup).empty());
  }
}

TEST_CASE("launch does not restart what a restart cannot fix", "[restart]") {
  std::vector<std::string> argv = {kLaunch, "--num_workers=2", "--max_restarts=3", "--",
                                   kTrain,  "--model=rnn"};
  Subprocess::Options options;
  options.timeout_s = kGuardS;
  SubprocessResult r = RunSubprocess(argv, options);
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("not restarting") != std::string::npos);
  CHECK(r.output.find("restarting every task") == std::string::npos);
}

TEST_CASE("SIGTERM to one worker: all save a backup and exit 143; a rerun resumes", "[sigterm]") {
  const int64_t epochs = 40;  // Long enough to be stopped half-way.
  const std::string backup = FreshTestDir("sigterm_backup");
  std::vector<std::string> args = TrainArgs(epochs);
  args.insert(args.end(), {"--backup_dir=" + backup, "--backup_freq_steps=100"});
  ProcessCluster cluster({kTrain, 4, false, args, {}, kGuardS});
  std::vector<std::unique_ptr<Subprocess>> processes;
  for (int i = 0; i < 4; ++i) {
    Subprocess::Options options;
    options.env["TF_CONFIG"] = cluster.tf_config(i);
    options.timeout_s = kGuardS;
    std::vector<std::string> argv = {kTrain};
    argv.insert(argv.end(), args.begin(), args.end());
    processes.push_back(std::make_unique<Subprocess>(Subprocess::Start(argv, options)));
  }
  // Once the first backup exists, worker:2 is told to stop.
  const double give_up = MonotonicSeconds() + 60;
  while (!fs::exists(backup + "/latest") && MonotonicSeconds() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(fs::exists(backup + "/latest"));
  const double signalled = MonotonicSeconds();
  processes[2]->Signal(SIGTERM);
  for (int i = 0; i < 4; ++i) {
    SubprocessResult r = processes[i]->Wait();
    INFO("task " << i << ":\n" << r.output);
    CHECK_FALSE(r.timed_out);
    CHECK(r.exit_code == 143);
    CHECK(r.output.find("1 worker(s) received SIGTERM") != std::string::npos);
  }
  CHECK(MonotonicSeconds() - signalled < 15);
  CheckLatestIsWhole(backup);
  absl::StatusOr<std::unique_ptr<CheckpointReader>> reader =
      CheckpointReader::Open(*LatestCheckpoint(backup));
  REQUIRE(reader.ok());
  const int64_t stopped_at = (*reader)->manifest().step;
  CHECK(stopped_at % 100 != 0);  // Saved at the stop, not a periodic backup.
  CHECK(stopped_at < epochs * 32);

  ProcessCluster rerun({kTrain, 4, false, args, {}, kGuardS});
  std::vector<SubprocessResult> results = rerun.Run();
  std::set<std::string> prints;
  for (const auto& r : results) {
    INFO(r.output);
    CHECK(r.exit_code == 0);
    for (const std::string& p : WeightsFingerprints(r.output)) prints.insert(p);
  }
  CHECK(results[0].output.find(absl::StrCat("(", stopped_at, " steps done)")) != std::string::npos);
  CHECK(prints == std::set<std::string>{Uninterrupted(epochs)});
}

TEST_CASE("a corrupt backup stops every worker with 5; another model's with 7", "[corrupt]") {
  const std::string dir = FreshTestDir("corrupt");
  std::vector<std::string> args = TrainArgs(1);
  ProcessCluster writer({kTrain, 2, false, args, {}, kGuardS});
  writer.AddArgs(0, {"--checkpoint_dir=" + dir});
  writer.AddArgs(1, {"--checkpoint_dir=" + dir});
  for (const auto& r : writer.Run()) REQUIRE(r.exit_code == 0);
  const std::string file = *LatestCheckpoint(dir);
  const std::string pristine = dir + "/../pristine.rwckpt";
  fs::copy_file(file, pristine, fs::copy_options::overwrite_existing);

  auto run_with_backup = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = args;
    a.push_back("--backup_dir=" + dir);
    a.insert(a.end(), extra.begin(), extra.end());
    return ProcessCluster({kTrain, 2, false, a, {}, kGuardS}).Run();
  };
  SECTION("a flipped bit in a tensor") {
    // The middle of the file: inside the first layer's kernel or its slots.
    const auto middle = static_cast<std::streamoff>(fs::file_size(file) / 2);
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(middle);
    const char c = static_cast<char>(f.get());
    f.seekp(middle);
    f.put(static_cast<char>(c ^ 0x04));
    f.close();
    for (const auto& r : run_with_backup({})) {
      INFO(r.output);
      CHECK(r.exit_code == 5);
      CHECK(r.output.find(file) != std::string::npos);
      CHECK(std::regex_search(r.output, std::regex("tensor \"[^\"]+\": CRC32C")));
    }
  }
  SECTION("a truncated file") {
    fs::resize_file(file, fs::file_size(file) / 2);
    for (const auto& r : run_with_backup({})) {
      INFO(r.output);
      CHECK(r.exit_code == 5);
      CHECK(r.output.find(file) != std::string::npos);
    }
  }
  SECTION("a missing file that latest names") {
    fs::remove(file);
    for (const auto& r : run_with_backup({})) {
      INFO(r.output);
      CHECK(r.exit_code == 5);
      CHECK(r.output.find(dir + "/latest names " + fs::path(file).filename().string() +
                          ", which is missing") != std::string::npos);
    }
  }
  SECTION("another model's checkpoint") {
    for (const auto& r : run_with_backup({"--model=cnn"})) {
      INFO(r.output);
      CHECK(r.exit_code == 7);
      CHECK(r.output.find("was written by another model") != std::string::npos);
    }
  }
  // Every refusal left the checkpoint as it was: nothing is deleted or rewritten.
  CHECK(fs::exists(dir + "/latest"));
  fs::remove(pristine);
}

TEST_CASE("a worker with another model: every worker exits 7 showing both sides", "[mismatch]") {
  ProcessCluster cluster({kTrain, 2, false, TrainArgs(1), {}, kGuardS});
  cluster.AddArgs(1, {"--model=cnn"});
  for (const auto& r : cluster.Run()) {
    INFO(r.output);
    CHECK(r.exit_code == 7);
    CHECK(r.output.find("worker:0") != std::string::npos);
    CHECK(r.output.find("worker:1") != std::string::npos);
    CHECK(r.output.find("conv2d") != std::string::npos);
  }
}

}  // namespace
}  // namespace ringwork
