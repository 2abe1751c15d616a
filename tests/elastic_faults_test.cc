// Faults that elastic training survives, on localhost clusters of real `train`
// processes: a worker that joins with other flags leaves alone (the members go
// on; `launch --elastic` still succeeds); a survivor that reaches the membership
// round late (a slow step or checkpoint write) is waited for; a worker joining a
// job whose members are gone does not make freshly started workers join it; a
// worker stopped while the others trained on never makes a quorum with workers
// that have no state; the backup of a run whose chief died as it ended is
// removed; a peer dying at the final barrier leaves the others' success alone;
// workers with different elastic settings refuse to train together (exit 7); a
// custom training loop survives a worker's death and lets it back in.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "checkpoint/checkpoint_directory.h"
#include "testing/log_lines.h"
#include "testing/process_cluster.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

constexpr char kTrain[] = "tools/train";
constexpr char kLaunch[] = "tools/launch/launch";
constexpr char kCustomLoop[] = "examples/custom_training_loop";
constexpr double kGuardS = 150;  // Per process; reaching it is a failure.

// MLP on the synthetic images: 35 steps of 120 per epoch. --inter_op_threads=1:
// one gradient all-reduce per step, so RINGWORK_CRASH_AT counts land alike.
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

// `launch --elastic` of `workers` running `program` (train, or a wrapper of it).
SubprocessResult LaunchElastic(int workers, int max_restarts,
                               const std::vector<std::string>& program,
                               const std::string& crash_at) {
  std::vector<std::string> argv = {kLaunch, absl::StrCat("--num_workers=", workers), "--elastic",
                                   absl::StrCat("--max_restarts=", max_restarts), "--"};
  argv.insert(argv.end(), program.begin(), program.end());
  Subprocess::Options options;
  options.env["RINGWORK_CRASH_AT"] = crash_at;
  options.timeout_s = kGuardS;
  return Subprocess::Start(argv, options).Wait();
}

// Task `task` of `cluster` running `argv`, with RINGWORK_CRASH_AT if given.
Subprocess StartTask(const ProcessCluster& cluster, int task, const std::vector<std::string>& argv,
                     const std::string& crash_at = "") {
  Subprocess::Options options;
  options.env["TF_CONFIG"] = cluster.tf_config(task);
  if (!crash_at.empty()) options.env["RINGWORK_CRASH_AT"] = crash_at;
  options.timeout_s = kGuardS;
  return Subprocess::Start(argv, options);
}

size_t CountMatches(const std::string& output, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<size_t>(std::distance(std::sregex_iterator(output.begin(), output.end(), re),
                                           std::sregex_iterator()));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void CheckOneFingerprint(const std::string& output, size_t workers) {
  const std::vector<std::string> fingerprints = WeightsFingerprints(output);
  CHECK(fingerprints.size() == workers);
  CHECK(std::set<std::string>(fingerprints.begin(), fingerprints.end()).size() == 1);
}

TEST_CASE(
    "a restarted worker joins with another --replica_check_steps: it alone exits 7, twice; "
    "the members go on and launch --elastic exits 0",
    "[elastic]") {
  // The wrapper gives restarted processes (RINGWORK_RESTART set) another flag.
  const std::string dir = FreshTestDir("elastic_mismatched_joiner");
  const std::string wrapper = dir + "/restarted_differ.sh";
  std::ofstream(wrapper) << "#!/bin/sh\n"
                            "if [ \"${RINGWORK_RESTART:-0}\" != 0 ]; then\n"
                            "  exec \"$@\" --replica_check_steps=7\n"
                            "fi\n"
                            "exec \"$@\"\n";
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  std::vector<std::string> program = {wrapper, kTrain};
  for (const std::string& a : TrainArgs(20, 2)) program.push_back(a);
  const SubprocessResult r = LaunchElastic(4, 2, program, "allreduce#30@worker:2");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_FALSE(r.timed_out);
  // Each restarted incarnation found the ring, differed, and left it alone.
  CHECK(CountMatches(r.output,
                     "exited with code 7 \\(model or collective mismatch between "
                     "workers; it was started again to join the job\\)") == 2);
  CHECK(LogLineTime(r.output, "this worker fits differently from the ring it joins", "worker:2") >=
        0);
  for (const std::string task : {"worker:0", "worker:1", "worker:3"}) {
    INFO(task);
    CHECK(LogLineTime(r.output,
                      "generation [0-9]+: worker:2 \\(127\\.0\\.0\\.1:[0-9]+\\) left: .*fits "
                      "differently from the ring.*; 3 of 4 workers go on",
                      task) >= 0);
  }
  CheckOneFingerprint(r.output, 3);
  CHECK(LogLineTime(r.output, "the job succeeded without the tasks that failed") >= 0);
}

TEST_CASE(
    "two workers restarted at once while the members are slow to let them in: both get in "
    "together",
    "[elastic]") {
  // Workers 3 and 4 of 5 die in all-reduce 30; launch starts them again 1 and 2 s
  // later; the members hold 4 s as they are about to let them in.
  std::vector<std::string> program = {kTrain};
  for (const std::string& a : TrainArgs(20, 2)) program.push_back(a);
  const SubprocessResult r = LaunchElastic(
      5, 2, program,
      "allreduce#30@worker:3,allreduce#30@worker:4,let_in@worker:0=4,let_in@worker:1=4,"
      "let_in@worker:2=4");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_FALSE(r.timed_out);
  for (const std::string task : {"worker:0", "worker:1", "worker:2"}) {
    INFO(task);
    CHECK(LogLineTime(r.output,
                      "generation [0-9]+: worker:3 \\(127\\.0\\.0\\.1:[0-9]+\\), worker:4 "
                      "\\(127\\.0\\.0\\.1:[0-9]+\\) joined; 5 workers go on",
                      task) >= 0);
  }
  CheckOneFingerprint(r.output, 5);
}

TEST_CASE(
    "a survivor reaches the membership round 3 s late (a slow step): the others wait for it "
    "and 3 of 4 go on",
    "[elastic]") {
  // worker 2 dies in all-reduce 30 while the chief is held up 3 s just before it.
  std::vector<std::string> program = {kTrain};
  for (const std::string& a : TrainArgs(3, 2)) program.push_back(a);
  const SubprocessResult r =
      LaunchElastic(4, 0, program, "allreduce#30@worker:2,allreduce#30@worker:0=3");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_FALSE(r.timed_out);
  REQUIRE(LogLineTime(r.output, "crash point allreduce #30: pausing", "worker:0") >= 0);
  CHECK(LogLineTime(r.output,
                    "membership round: waiting up to 10 s in all for workers alive and "
                    "still busy in an earlier ring: worker:0") >= 0);
  for (const std::string task : {"worker:0", "worker:1", "worker:3"}) {
    INFO(task);
    CHECK(LogLineTime(r.output,
                      "generation 1: worker:2 \\(127\\.0\\.0\\.1:[0-9]+\\) left: .*3 of "
                      "4 workers go on",
                      task) >= 0);
  }
  CHECK(r.output.find("lost the quorum") == std::string::npos);
  CheckOneFingerprint(r.output, 3);
}

TEST_CASE(
    "the members die while a restarted worker waits to join: fresh workers started then are "
    "not told that a job runs; they start a new job with the next fresh worker",
    "[elastic]") {
  ProcessCluster cluster({kTrain, 3, false, {}, {}, kGuardS});
  const std::vector<std::string> args = TrainArgs(200, 2);
  std::vector<std::string> argv = {kTrain};
  argv.insert(argv.end(), args.begin(), args.end());
  auto start = [&](int task, const std::string& crash_at) {
    return StartTask(cluster, task, argv, crash_at);
  };
  // Worker 2 dies; the members hold 25 s as they are about to let it back in.
  const std::string crash_at = "allreduce#30@worker:2,let_in@worker:0=25,let_in@worker:1=25";
  Subprocess member0 = start(0, crash_at), member1 = start(1, crash_at);
  CHECK(start(2, crash_at).Wait().exit_code == 128 + SIGKILL);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  Subprocess joiner = start(2, "");
  std::this_thread::sleep_for(std::chrono::seconds(5));  // It waits in its membership round.
  member0.Signal(SIGKILL);
  member1.Signal(SIGKILL);
  (void)member0.Wait();
  (void)member1.Wait();
  Subprocess fresh0 = start(0, ""), fresh1 = start(1, "");
  const SubprocessResult joined = joiner.Wait();
  INFO("the joiner:\n" << joined.output);
  CHECK(joined.exit_code == 3);
  CHECK(joined.output.find("is gone") != std::string::npos);
  Subprocess fresh2 = start(2, "");
  std::vector<std::string> outputs;
  for (Subprocess* p : {&fresh0, &fresh1, &fresh2}) {
    const SubprocessResult r = p->Wait();
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("runs the job already") == std::string::npos);
    outputs.push_back(r.output);
  }
  CheckOneFingerprint(absl::StrCat(outputs[0], outputs[1], outputs[2]), 3);
}

TEST_CASE(
    "a stopped worker resumes after the majority that went on died and was started afresh: "
    "the fresh ones (no state) do not make a quorum with it; nobody trains from its old state",
    "[elastic]") {
  const std::string dir = FreshTestDir("elastic_stale_worker");
  ProcessCluster cluster({kTrain, 3, false, {}, {}, kGuardS});
  std::vector<std::string> args = TrainArgs(200, 2);
  args.insert(args.end(), {"--heartbeat_interval_s=0.5", "--heartbeat_misses=4",
                           "--checkpoint_dir=" + dir + "/ckpt", "--checkpoint_freq_steps=20"});
  std::vector<std::string> argv = {kTrain};
  argv.insert(argv.end(), args.begin(), args.end());
  auto start = [&](int task) { return StartTask(cluster, task, argv); };
  Subprocess worker0 = start(0), worker1 = start(1), stale = start(2);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  stale.Signal(SIGSTOP);
  std::this_thread::sleep_for(std::chrono::seconds(6));  // 0 and 1 go on without it.
  worker0.Signal(SIGKILL);
  worker1.Signal(SIGKILL);
  const SubprocessResult r0 = worker0.Wait();
  INFO(r0.output);
  REQUIRE(LogLineTime(r0.output, "generation 1: worker:2 \\(127\\.0\\.0\\.1:[0-9]+\\) left") >= 0);
  (void)worker1.Wait();
  const std::string latest_before = ReadFile(dir + "/ckpt/latest");
  Subprocess fresh0 = start(0), fresh1 = start(1);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  stale.Signal(SIGCONT);
  const SubprocessResult s = stale.Wait();
  INFO("the stale worker:\n" << s.output);
  CHECK(s.exit_code == 3);
  CHECK(s.output.find("2 joining without the job's state") != std::string::npos);
  for (Subprocess* p : {&fresh0, &fresh1}) {
    const SubprocessResult r = p->Wait();
    INFO(r.output);
    CHECK(r.exit_code == 3);
    CHECK(WeightsFingerprints(r.output).empty());
  }
  CHECK(ReadFile(dir + "/ckpt/latest") == latest_before);  // Never moved backwards.
}

TEST_CASE(
    "the chief dies in the all-reduce that ends fit: the backup of the finished run is removed "
    "by the workers that finish it, and the same command runs afresh",
    "[elastic]") {
  const std::string dir = FreshTestDir("elastic_backup_after_chief");
  std::vector<std::string> program = {kTrain};
  for (const std::string& a : TrainArgs(2, 2)) program.push_back(a);
  program.push_back("--backup_dir=" + dir + "/backup");
  // allreduce_round#86: with these flags the agreement that training ended.
  const SubprocessResult r = LaunchElastic(4, 0, program, "allreduce_round#86@worker:0");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  REQUIRE(LogLineTime(r.output, "crash point allreduce_round", "worker:0") >= 0);
  REQUIRE(LogLineTime(r.output, "training had ended on another worker") >= 0);
  CHECK(ListCheckpoints(dir + "/backup").empty());
  CHECK_FALSE(std::filesystem::exists(dir + "/backup/latest"));
  const SubprocessResult again = LaunchElastic(4, 0, program, "");
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK(again.output.find("resuming from the backup") == std::string::npos);
}

TEST_CASE("a worker dies at the final barrier, after training and evaluation: the others exit 0",
          "[elastic]") {
  std::vector<std::string> program = {kTrain};
  for (const std::string& a : TrainArgs(1, 2)) program.push_back(a);
  const SubprocessResult r = LaunchElastic(3, 0, program, "shutdown@worker:2");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  REQUIRE(LogLineTime(r.output, "crash point shutdown", "worker:2") >= 0);
  for (const std::string task : {"worker:0", "worker:1"}) {
    INFO(task);
    CHECK(LogLineTime(r.output, "a peer left after the work was done", task) >= 0);
    CHECK(LogLineTime(r.output, absl::StrCat(task, " exited with code 0")) >= 0);
  }
  CheckOneFingerprint(r.output, 3);  // Worker 2 finished its work before it died.
}

TEST_CASE(
    "a custom training loop (RunElastic): one of 3 workers SIGKILLed, the other 2 go on; it "
    "starts again, joins, and all 3 end alike",
    "[elastic]") {
  ProcessCluster cluster({kCustomLoop, 3, false, {}, {}, kGuardS});
  auto start = [&](int task) {
    return StartTask(cluster, task, {kCustomLoop, "--min_workers=2", "--epochs=4000"});
  };
  Subprocess worker0 = start(0), worker1 = start(1), worker2 = start(2);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  worker1.Signal(SIGKILL);
  CHECK(worker1.Wait().exit_code == 128 + SIGKILL);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  Subprocess again = start(1);
  std::set<std::string> checksums;
  for (Subprocess* p : {&worker0, &worker2, &again}) {
    const SubprocessResult r = p->Wait();
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(LogLineTime(r.output,
                      "generation [12]: worker:1 \\(127\\.0\\.0\\.1:[0-9]+\\) "
                      "joined; 3 workers go on") >= 0);
    if (p != &again) {
      CHECK(LogLineTime(r.output,
                        "generation 1: worker:1 \\(127\\.0\\.0\\.1:[0-9]+\\) left: "
                        ".*; 2 workers go on") >= 0);
    }
    std::smatch m;
    REQUIRE(std::regex_search(r.output, m, std::regex("weights checksum (\\S+)")));
    checksums.insert(m[1]);
  }
  CHECK(checksums.size() == 1);
}

TEST_CASE("workers with different --min_workers or --heartbeat_misses refuse to train (exit 7)",
          "[elastic]") {
  for (const std::string flag : {"--min_workers=1", "--heartbeat_misses=9"}) {
    INFO(flag);
    ProcessCluster cluster({kTrain, 3, false, TrainArgs(1, 2), {}, kGuardS});
    cluster.AddArgs(2, {flag});
    const std::vector<SubprocessResult> results = cluster.Run();
    const std::string name = flag.substr(0, flag.find('='));
    for (const SubprocessResult& r : results) {
      INFO(r.output);
      CHECK(r.exit_code == 7);
      CHECK(r.output.find("the workers' elastic training settings differ: " + name) !=
            std::string::npos);
    }
  }
}

}  // namespace
}  // namespace ringwork
