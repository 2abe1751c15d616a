// ModelCheckpoint, BackupAndRestore and the training state on in-process clusters
// of real workers: a fit that fails or is preempted and is run again ends with the
// weights of a fit that never stopped, bit for bit; checkpoints of another model
// or corrupt ones are refused on every worker.
#include "keras/checkpoint_callbacks.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "base/exit_code.h"
#include "base/status_macros.h"
#include "base/termination.h"
#include "data/fashion_mnist.h"
#include "keras/sequential.h"
#include "keras/training_state.h"
#include "testing/local_cluster.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

namespace fs = std::filesystem;

const Dataset& TrainData() {
  static const Dataset* data =
      new Dataset(Dataset::FromExamples(SyntheticImages(960, 0, 11).train));
  return *data;
}

absl::Status BuildModel(Sequential& model, int hidden = 32) {
  model.Add(RandomFlip());  // Its draws must resume too (the labels need not stay right).
  model.Add(Flatten());
  model.Add(Dense(hidden, {.activation = "relu"}));
  model.Add(Dropout(0.2));  // Its random draws must resume too.
  model.Add(Dense(10));
  CompileOptions compile;
  compile.loss = {"sparse_categorical_crossentropy", true};
  compile.optimizer.name = "adam";  // Slots and an iteration count to restore.
  compile.intra_op_threads = 1;
  return model.Compile(compile);
}

// Fails every worker after global step `at` (as a crash would, but in-process).
class FailAfterStep : public Callback {
 public:
  explicit FailAfterStep(int64_t at) : at_(at) {}
  absl::Status OnEpochBegin(int64_t epoch) override {
    epoch_ = epoch;
    return absl::OkStatus();
  }
  absl::Status OnBatchEnd(int64_t step, const Logs&) override {
    if (epoch_ * steps_ + step == at_) return PeerError("simulated failure");
    return absl::OkStatus();
  }
  absl::Status OnTrainBegin(const TrainInfo& info) override {
    steps_ = info.steps_per_epoch;
    return absl::OkStatus();
  }

 private:
  int64_t at_, epoch_ = 0, steps_ = 0;
};

// Requests termination (as SIGTERM would) on one worker after global step `at`.
class TerminateAfterStep : public FailAfterStep {
 public:
  TerminateAfterStep(int64_t at, int rank, int my_rank)
      : FailAfterStep(at), at_(at), rank_(rank), my_rank_(my_rank) {}
  absl::Status OnBatchEnd(int64_t step, const Logs& logs) override {
    if (my_rank_ == rank_ && !FailAfterStep::OnBatchEnd(step, logs).ok())
      RequestTerminationForTest();
    return absl::OkStatus();
  }

 private:
  int64_t at_;
  int rank_, my_rank_;
};

constexpr int kWorkers = 2;
constexpr int64_t kEpochs = 3;
constexpr int64_t kBatch = 64;  // 15 steps per epoch.

struct FitRun {
  std::vector<absl::Status> results;
  std::vector<uint64_t> hashes = std::vector<uint64_t>(kWorkers);
  std::vector<bool> restored = std::vector<bool>(kWorkers);
  std::vector<TrainPosition> restored_at = std::vector<TrainPosition>(kWorkers);
};

// One fit of the test model on kWorkers workers. `extra(rank)` makes the
// callbacks to add after a BackupAndRestore in `backup_dir` (none when empty).
FitRun RunFit(const std::string& backup_dir, int64_t backup_freq_steps,
              const std::function<std::unique_ptr<Callback>(int)>& extra) {
  FitRun run;
  LocalCluster::Options options;
  options.num_workers = kWorkers;
  run.results = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
    auto scope = w.strategy->scope();
    Sequential model;
    RW_RETURN_IF_ERROR(BuildModel(model));
    FitOptions fit;
    fit.epochs = kEpochs;
    fit.batch_size = kBatch;
    fit.verbose = 0;
    std::unique_ptr<BackupAndRestore> backup;
    if (!backup_dir.empty()) {
      backup = std::make_unique<BackupAndRestore>(
          BackupOptions{.backup_dir = backup_dir, .save_freq_steps = backup_freq_steps});
      fit.callbacks.push_back(backup.get());
    }
    std::unique_ptr<Callback> more = extra ? extra(w.rank) : nullptr;
    if (more != nullptr) fit.callbacks.push_back(more.get());
    absl::Status status = model.Fit(TrainData(), fit).status();
    run.hashes[w.rank] = WeightsFingerprint(model);
    if (backup != nullptr) {
      run.restored[w.rank] = backup->restored();
      run.restored_at[w.rank] = backup->restored_at();
    }
    return status;
  });
  return run;
}

uint64_t Uninterrupted() {
  static const uint64_t hash = [] {
    FitRun run = RunFit("", 0, nullptr);
    for (const absl::Status& s : run.results) REQUIRE(s.ok());
    REQUIRE(run.hashes[1] == run.hashes[0]);
    return run.hashes[0];
  }();
  return hash;
}

TEST_CASE("a failed fit run again from its backup ends as if it never failed", "[backup]") {
  const uint64_t expected = Uninterrupted();
  for (int64_t freq : {0, 4}) {  // Every epoch; every 4 steps.
    INFO("save_freq_steps " << freq);
    const std::string dir = FreshTestDir(absl::StrCat("backup_", freq));
    // Fails after step 22 of 45: the last backup is at 15 (epoch) or 20 (steps).
    FitRun failed = RunFit(dir, freq, [](int) { return std::make_unique<FailAfterStep>(22); });
    for (const absl::Status& s : failed.results) {
      INFO(s.message());
      CHECK(ExitCodeFor(s) == kPeerFailure);
      CHECK(s.message().find("epoch 2, step 7") != absl::string_view::npos);
    }
    CHECK(failed.hashes[0] != expected);
    REQUIRE(LatestCheckpoint(dir).ok());

    FitRun resumed = RunFit(dir, freq, nullptr);
    for (int r = 0; r < kWorkers; ++r) {
      INFO("worker " << r << ": " << resumed.results[r].message());
      REQUIRE(resumed.results[r].ok());
      CHECK(resumed.restored[r]);
      CHECK(resumed.restored_at[r].step == (freq == 0 ? 15 : 20));
      CHECK(resumed.restored_at[r].epoch == 1);
      CHECK(resumed.hashes[r] == expected);
    }
    // A completed fit removes its backup.
    CHECK(ListCheckpoints(dir).empty());
    CHECK(absl::IsNotFound(LatestCheckpoint(dir).status()));
  }
}

TEST_CASE("termination on one worker stops every worker after a backup (143)", "[backup]") {
  const uint64_t expected = Uninterrupted();
  const std::string dir = FreshTestDir("backup_sigterm");
  ClearTerminationRequestForTest();
  FitRun stopped =
      RunFit(dir, 0, [](int rank) { return std::make_unique<TerminateAfterStep>(19, 1, rank); });
  ClearTerminationRequestForTest();
  for (const absl::Status& s : stopped.results) {
    INFO(s.message());
    CHECK(ExitCodeFor(s) == kPreempted);
    CHECK(s.message().find("received SIGTERM") != absl::string_view::npos);
  }
  // Every worker saw the request at step 20 and stopped there, after saving it.
  REQUIRE(LatestCheckpoint(dir).ok());
  CHECK(*LatestCheckpoint(dir) == dir + "/" + CheckpointFileName(20));
  FitRun resumed = RunFit(dir, 0, nullptr);
  for (int r = 0; r < kWorkers; ++r) {
    INFO("worker " << r << ": " << resumed.results[r].message());
    REQUIRE(resumed.results[r].ok());
    CHECK(resumed.restored_at[r].step == 20);
    CHECK(resumed.restored_at[r].step_in_epoch == 5);
    CHECK(resumed.hashes[r] == expected);
  }
}

// Runs `fn` on kWorkers workers, each with a freshly built test model.
std::vector<absl::Status> WithModel(int hidden,
                                    const std::function<absl::Status(Sequential&, int)>& fn) {
  LocalCluster::Options options;
  options.num_workers = kWorkers;
  return LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
    auto scope = w.strategy->scope();
    Sequential model;
    RW_RETURN_IF_ERROR(BuildModel(model, hidden));
    RW_RETURN_IF_ERROR(model.Build({28, 28, 1}));
    return fn(model, w.rank);
  });
}

TEST_CASE("ModelCheckpoint keeps the newest, marks the last final, and restores exactly",
          "[checkpoint]") {
  const std::string dir = FreshTestDir("model_checkpoints");
  std::vector<uint64_t> trained(kWorkers);
  LocalCluster::Options options;
  options.num_workers = kWorkers;
  auto results = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
    auto scope = w.strategy->scope();
    Sequential model;
    RW_RETURN_IF_ERROR(BuildModel(model));
    ModelCheckpoint checkpoints({.directory = dir, .save_freq_steps = 10, .keep = 2});
    FitOptions fit;
    fit.epochs = kEpochs;
    fit.batch_size = kBatch;
    fit.verbose = 0;
    fit.callbacks = {&checkpoints};
    RW_RETURN_IF_ERROR(model.Fit(TrainData(), fit).status());
    trained[w.rank] = WeightsFingerprint(model);
    return absl::OkStatus();
  });
  for (const absl::Status& s : results) REQUIRE(s.ok());
  // Steps 10..40 and the final 45; the newest two kept.
  std::vector<std::string> files = ListCheckpoints(dir);
  REQUIRE(files.size() == 2);
  CHECK(fs::path(files[0]).filename() == CheckpointFileName(40));
  CHECK(fs::path(files[1]).filename() == CheckpointFileName(45));
  absl::StatusOr<std::unique_ptr<CheckpointReader>> reader = CheckpointReader::Open(files[1]);
  REQUIRE(reader.ok());
  CHECK((*reader)->manifest().final);
  CHECK((*reader)->manifest().counters.at("optimizer_iterations") == 45);

  // A fresh model restored from the final checkpoint has the trained weights.
  std::vector<uint64_t> restored(kWorkers);
  auto restores = WithModel(32, [&](Sequential& model, int rank) -> absl::Status {
    RW_ASSIGN_OR_RETURN(TrainPosition at, RestoreTrainingState(model, files[1]));
    if (at.step != 45 || at.epoch != kEpochs) return absl::InternalError("wrong position");
    if (model.optimizer()->iterations() != 45) return absl::InternalError("wrong iterations");
    restored[rank] = WeightsFingerprint(model);
    return absl::OkStatus();
  });
  for (int r = 0; r < kWorkers; ++r) {
    INFO(restores[r].message());
    REQUIRE(restores[r].ok());
    CHECK(restored[r] == trained[0]);
  }

  SECTION("another model's checkpoint is refused on every worker with 7") {
    auto refused = WithModel(
        48, [&](Sequential& model, int) { return RestoreTrainingState(model, files[1]).status(); });
    for (const absl::Status& s : refused) {
      INFO(s.message());
      CHECK(ExitCodeFor(s) == kMismatch);
      CHECK(s.message().find("another model") != absl::string_view::npos);
      CHECK(s.message().find("dense/kernel") != absl::string_view::npos);
      CHECK(s.message().find(files[1]) != absl::string_view::npos);
    }
    CHECK(refused[1].message().find("on the chief") != absl::string_view::npos);
  }

  SECTION("a corrupt checkpoint is refused on every worker with 5") {
    {
      std::fstream f(files[1], std::ios::in | std::ios::out | std::ios::binary);
      f.seekg(-7, std::ios::end);
      char c = 0;
      f.get(c);
      f.seekp(-7, std::ios::end);
      f.put(static_cast<char>(c ^ 0x10));
    }
    auto refused = WithModel(
        32, [&](Sequential& model, int) { return RestoreTrainingState(model, files[1]).status(); });
    for (const absl::Status& s : refused) {
      INFO(s.message());
      CHECK(ExitCodeFor(s) == kInvalidCheckpoint);
      CHECK(s.message().find(files[1]) != absl::string_view::npos);
      CHECK(s.message().find("CRC32C") != absl::string_view::npos);
    }
  }
}

// At the end of training, on one rank: SIGTERM arrives (as a request), or the
// checkpoint directory is replaced by a file so that the final write fails.
class DisturbTrainEnd : public Callback {
 public:
  enum class How { kSigterm, kBreakDirectory, kFail };
  DisturbTrainEnd(How how, int rank, int my_rank, std::string dir)
      : how_(how), rank_(rank), my_rank_(my_rank), dir_(std::move(dir)) {}
  absl::Status OnTrainEnd(const Logs&) override {
    if (my_rank_ != rank_) return absl::OkStatus();
    if (how_ == How::kSigterm) {
      RequestTerminationForTest();
    } else if (how_ == How::kFail) {
      return absl::InternalError("simulated failure at the end of training");
    } else {
      fs::remove_all(dir_);
      std::ofstream(dir_) << "not a directory";
    }
    return absl::OkStatus();
  }

 private:
  How how_;
  int rank_, my_rank_;
  std::string dir_;
};

TEST_CASE("the backup outlives a SIGTERM or a failed write at the end of training", "[backup]") {
  const uint64_t expected = Uninterrupted();
  for (auto how : {DisturbTrainEnd::How::kSigterm, DisturbTrainEnd::How::kBreakDirectory}) {
    const bool sigterm = how == DisturbTrainEnd::How::kSigterm;
    INFO((sigterm ? "SIGTERM on worker 1 while the final checkpoint is written"
                  : "the chief's final checkpoint write fails"));
    const std::string backup_dir =
        FreshTestDir(sigterm ? "end_backup_sigterm" : "end_backup_write");
    const std::string models = FreshTestDir(sigterm ? "end_models_sigterm" : "end_models_write");
    auto fit_once = [&](bool disturb, std::vector<uint64_t>* hashes) {
      LocalCluster::Options options;
      options.num_workers = kWorkers;
      return LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
        auto scope = w.strategy->scope();
        Sequential model;
        RW_RETURN_IF_ERROR(BuildModel(model));
        BackupAndRestore backup({.backup_dir = backup_dir});
        DisturbTrainEnd disturbance(how, sigterm ? 1 : 0, w.rank, models);
        ModelCheckpoint checkpoints({.directory = models});
        FitOptions fit;
        fit.epochs = kEpochs;
        fit.batch_size = kBatch;
        fit.verbose = 0;
        fit.callbacks = {&backup, &checkpoints};
        // Before ModelCheckpoint for a broken directory, after it for a SIGTERM
        // that arrives once the final checkpoint is on its way.
        if (disturb) {
          fit.callbacks.insert(sigterm ? fit.callbacks.end() : fit.callbacks.begin() + 1,
                               &disturbance);
        }
        absl::Status status = model.Fit(TrainData(), fit).status();
        (*hashes)[w.rank] = WeightsFingerprint(model);
        return status;
      });
    };
    ClearTerminationRequestForTest();
    std::vector<uint64_t> hashes(kWorkers);
    std::vector<absl::Status> stopped = fit_once(true, &hashes);
    ClearTerminationRequestForTest();
    for (int r = 0; r < kWorkers; ++r) {
      INFO("worker " << r << ": " << stopped[r].message());
      if (sigterm) {
        CHECK(ExitCodeFor(stopped[r]) == kPreempted);
        CHECK(stopped[r].message().find("received SIGTERM") != absl::string_view::npos);
      } else {
        CHECK(!stopped[r].ok());
        // Every worker gets the chief's write error (SaveTrainingState shares it).
        if (r != 0) CHECK(stopped[r].message().find("on the chief") != absl::string_view::npos);
        CHECK(stopped[r].message().find("Not a directory") != absl::string_view::npos);
      }
    }
    // The backup of the last epoch is still there.
    REQUIRE(LatestCheckpoint(backup_dir).ok());
    CHECK(*LatestCheckpoint(backup_dir) == backup_dir + "/" + CheckpointFileName(45));
    if (sigterm) CHECK(LatestCheckpoint(models).ok());  // The final checkpoint too.

    // The rerun resumes at the end: nothing left to train; the final checkpoint is
    // written and the backup removed.
    if (!sigterm) fs::remove(models);
    std::vector<absl::Status> rerun = fit_once(false, &hashes);
    for (int r = 0; r < kWorkers; ++r) {
      INFO("worker " << r << ": " << rerun[r].message());
      REQUIRE(rerun[r].ok());
      CHECK(hashes[r] == expected);
    }
    CHECK(ListCheckpoints(backup_dir).empty());
    REQUIRE(LatestCheckpoint(models).ok());
    absl::StatusOr<std::unique_ptr<CheckpointReader>> reader =
        CheckpointReader::Open(*LatestCheckpoint(models));
    REQUIRE(reader.ok());
    CHECK((*reader)->manifest().final);
  }
}

TEST_CASE("a worker that fails to end training keeps every worker's backup", "[backup]") {
  // Worker 1 (not the chief, which writes and removes the backup) fails at the end:
  // the chief learns it from the agreement and keeps the backup.
  const std::string backup_dir = FreshTestDir("end_backup_fail");
  LocalCluster::Options options;
  options.num_workers = kWorkers;
  std::vector<absl::Status> results =
      LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
        auto scope = w.strategy->scope();
        Sequential model;
        RW_RETURN_IF_ERROR(BuildModel(model));
        BackupAndRestore backup({.backup_dir = backup_dir});
        DisturbTrainEnd failure(DisturbTrainEnd::How::kFail, 1, w.rank, "");
        FitOptions fit;
        fit.epochs = kEpochs;
        fit.batch_size = kBatch;
        fit.verbose = 0;
        fit.callbacks = {&backup, &failure};
        return model.Fit(TrainData(), fit).status();
      });
  INFO(results[0].message());
  CHECK(absl::IsUnavailable(results[0]));
  CHECK(results[0].message().find("1 other worker(s) failed to end training") !=
        absl::string_view::npos);
  INFO(results[1].message());
  CHECK(results[1].message().find("simulated failure at the end of training") !=
        absl::string_view::npos);
  REQUIRE(LatestCheckpoint(backup_dir).ok());
  CHECK(*LatestCheckpoint(backup_dir) == backup_dir + "/" + CheckpointFileName(45));
}

// A fit with a backup, on `workers` workers with a global `batch`.
std::vector<absl::Status> FitWithBackup(const std::string& dir, int workers, int64_t batch,
                                        ResumePolicy policy,
                                        std::vector<TrainPosition>* restored_at,
                                        int64_t fail_after = -1) {
  LocalCluster::Options options;
  options.num_workers = workers;
  restored_at->assign(static_cast<size_t>(workers), TrainPosition{-1, -1, -1});
  return LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
    auto scope = w.strategy->scope();
    Sequential model;
    RW_RETURN_IF_ERROR(BuildModel(model));
    BackupAndRestore backup({.backup_dir = dir, .save_freq_steps = 4, .resume_policy = policy});
    FailAfterStep failure(fail_after);
    FitOptions fit;
    fit.epochs = kEpochs;
    fit.batch_size = batch;
    fit.verbose = 0;
    fit.callbacks = {&backup, &failure};
    absl::Status status = model.Fit(TrainData(), fit).status();
    if (backup.restored()) (*restored_at)[static_cast<size_t>(w.rank)] = backup.restored_at();
    return status;
  });
}

TEST_CASE(
    "a resume whose data position would mean other examples is refused, or starts "
    "the next epoch when asked",
    "[backup]") {
  const std::string dir = FreshTestDir("backup_settings");
  std::vector<TrainPosition> at;
  // 2 workers, global batch 64 (15 steps an epoch): fails after step 22, backed up at 20.
  for (const absl::Status& s : FitWithBackup(dir, 2, kBatch, ResumePolicy::kExact, &at, 22)) {
    REQUIRE(!s.ok());
  }
  SECTION("another global batch: refused with exit 7 naming both") {
    for (const absl::Status& s : FitWithBackup(dir, 2, 2 * kBatch, ResumePolicy::kExact, &at)) {
      INFO(s.message());
      CHECK(ExitCodeFor(s) == kMismatch);
      CHECK(s.message().find("global batch size 64 in the checkpoint, 128 now") !=
            absl::string_view::npos);
      CHECK(s.message().find("--resume_policy=epoch") != absl::string_view::npos);
    }
  }
  SECTION("another global batch, --resume_policy=epoch: the next epoch boundary") {
    // Backed up in epoch 2 (step 20 = 15 + 5): resumes at the start of epoch 3,
    // which has 8 steps of 128 (960 examples).
    for (const absl::Status& s : FitWithBackup(dir, 2, 2 * kBatch, ResumePolicy::kEpoch, &at)) {
      INFO(s.message());
      CHECK(s.ok());
    }
    for (const TrainPosition& p : at) {
      CHECK(p.epoch == 2);
      CHECK(p.step_in_epoch == 0);
      CHECK(p.step == 16);
    }
  }
  SECTION("DATA with the same global batch on 4 workers: resumes exactly") {
    for (const absl::Status& s : FitWithBackup(dir, 4, kBatch, ResumePolicy::kExact, &at)) {
      INFO(s.message());
      CHECK(s.ok());
    }
    for (const TrainPosition& p : at) {
      CHECK(p.step == 20);
      CHECK(p.step_in_epoch == 5);
    }
  }
}

TEST_CASE("a second job cannot back up into a directory in use", "[backup]") {
  const std::string dir = FreshTestDir("backup_locked");
  absl::StatusOr<std::unique_ptr<CheckpointDirectory>> held =
      CheckpointDirectory::OpenForWriting(dir, 1);
  REQUIRE(held.ok());
  FitRun run = RunFit(dir, 0, nullptr);
  for (const absl::Status& s : run.results) {
    INFO(s.message());
    CHECK(ExitCodeFor(s) == kUsageOrConfig);
    CHECK(s.message().find(dir) != absl::string_view::npos);
  }
}

}  // namespace
}  // namespace ringwork
