// EarlyStopping, ReduceLROnPlateau, LearningRateScheduler, TerminateOnNaN,
// CSVLogger and gradient clipping on in-process clusters of real workers: every
// worker takes the chief's decisions at the same step, and a run resumed from its
// backup decides (and ends) exactly as the uninterrupted run.
#include "keras/training_callbacks.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "base/exit_code.h"
#include "base/status_macros.h"
#include "data/fashion_mnist.h"
#include "keras/checkpoint_callbacks.h"
#include "keras/sequential.h"
#include "keras/training_state.h"
#include "testing/local_cluster.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

using Catch::Matchers::Contains;

constexpr int kWorkers = 2;
constexpr int64_t kBatch = 64;  // 10 steps per epoch of 640 examples.

const TrainTest& Data() {
  static const TrainTest* data = new TrainTest(SyntheticImages(640, 256, 7));
  return *data;
}

struct WorkerRun {
  absl::Status status;
  int64_t epochs = 0;    // Epochs in History.
  int64_t examples = 0;  // Examples trained on, over every worker.
  uint64_t weights = 0;
  float learning_rate = 0;
  std::vector<double> logged_rates;  // History's "learning_rate".
};

struct Setup {
  OptimizerSpec optimizer;
  int64_t epochs = 4;
  bool validation = true;
  // The callbacks of worker `rank` (owned by the caller's vector).
  std::function<std::vector<std::unique_ptr<Callback>>(int rank)> callbacks;
  const Dataset* train = nullptr;
  bool batch_norm = false;  // A BatchNormalization after the hidden layer.
};

std::vector<WorkerRun> Run(const Setup& setup) {
  std::vector<WorkerRun> runs(kWorkers);
  static const Dataset* train = new Dataset(Dataset::FromExamples(Data().train));
  static const Dataset* test = new Dataset(Dataset::FromExamples(Data().test));
  LocalCluster::Options options;
  options.num_workers = kWorkers;
  auto results = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
    auto scope = w.strategy->scope();
    Sequential model;
    model.Add(Flatten());
    model.Add(Dense(32, {.activation = "relu"}));
    if (setup.batch_norm) model.Add(BatchNormalization());
    model.Add(Dense(10));
    CompileOptions compile;
    compile.loss = {"sparse_categorical_crossentropy", true};
    compile.optimizer = setup.optimizer;
    compile.intra_op_threads = 1;
    RW_RETURN_IF_ERROR(model.Compile(compile));
    FitOptions fit;
    fit.epochs = setup.epochs;
    fit.batch_size = kBatch;
    fit.verbose = 0;
    if (setup.validation) fit.validation_data = test;
    std::vector<std::unique_ptr<Callback>> owned;
    if (setup.callbacks) owned = setup.callbacks(w.rank);
    for (auto& c : owned) fit.callbacks.push_back(c.get());
    absl::StatusOr<History> history =
        model.Fit(setup.train != nullptr ? *setup.train : *train, fit);
    WorkerRun& run = runs[w.rank];
    run.weights = WeightsFingerprint(model);
    run.learning_rate = model.optimizer()->learning_rate();
    if (!history.ok()) return history.status();
    run.epochs = static_cast<int64_t>(history->examples_per_epoch().size());
    for (int64_t n : history->examples_per_epoch()) run.examples += n;
    if (history->history().count("learning_rate")) run.logged_rates = (*history)["learning_rate"];
    return absl::OkStatus();
  });
  for (int r = 0; r < kWorkers; ++r) runs[r].status = results[r];
  return runs;
}

void RequireAllOk(const std::vector<WorkerRun>& runs) {
  for (int r = 0; r < kWorkers; ++r) {
    INFO("worker " << r << ": " << runs[r].status.message());
    REQUIRE(runs[r].status.ok());
    CHECK(runs[r].weights == runs[0].weights);
    CHECK(runs[r].epochs == runs[0].epochs);
    CHECK(runs[r].examples == runs[0].examples);
    CHECK(runs[r].learning_rate == runs[0].learning_rate);
  }
}

template <typename T, typename... Args>
std::vector<std::unique_ptr<Callback>> One(Args&&... args) {
  std::vector<std::unique_ptr<Callback>> v;
  v.push_back(std::make_unique<T>(std::forward<Args>(args)...));
  return v;
}

TEST_CASE("EarlyStopping stops every worker at the same epoch and restores the best weights",
          "[callbacks]") {
  // No epoch can improve by 10: the first sets the best, the second stops (patience 1).
  std::vector<int64_t> stopped(kWorkers, -1);
  std::vector<EarlyStopping*> stoppers(kWorkers);
  Setup setup;
  setup.callbacks = [&](int rank) {
    auto v = One<EarlyStopping>(EarlyStoppingOptions{
        .monitor = "val_loss", .min_delta = 10, .patience = 1, .restore_best_weights = true});
    stoppers[rank] = static_cast<EarlyStopping*>(v[0].get());
    return v;
  };
  std::vector<WorkerRun> runs = Run(setup);
  RequireAllOk(runs);
  for (int r = 0; r < kWorkers; ++r) {
    CHECK(runs[r].epochs == 2);
    CHECK(stoppers[r]->stopped_epoch() == 1);
    CHECK(stoppers[r]->best_epoch() == 0);
  }
  // The weights are those after epoch 1: a 1-epoch run ends with them.
  Setup one_epoch;
  one_epoch.epochs = 1;
  std::vector<WorkerRun> first = Run(one_epoch);
  RequireAllOk(first);
  CHECK(runs[0].weights == first[0].weights);

  // A monitored value that is not logged is an error naming those that are.
  Setup wrong;
  wrong.validation = false;
  wrong.callbacks = [](int) {
    return One<EarlyStopping>(EarlyStoppingOptions{.monitor = "val_loss"});
  };
  for (const WorkerRun& run : Run(wrong)) {
    CHECK_THAT(std::string(run.status.message()),
               Contains("EarlyStopping monitors \"val_loss\", which is not in this epoch's logs "
                        "(accuracy, loss)"));
  }
}

// Asks to stop after step `at` of the first epoch, on worker `rank` only.
class StopOnOneWorker : public Callback {
 public:
  StopOnOneWorker(int64_t at, int rank, int my_rank) : at_(at), rank_(rank), my_rank_(my_rank) {}
  absl::Status OnBatchEnd(int64_t step, const Logs&) override {
    if (step == at_ && my_rank_ == rank_) model_->set_stop_training(true);
    return absl::OkStatus();
  }

 private:
  int64_t at_;
  int rank_, my_rank_;
};

TEST_CASE(
    "a stop asked for in OnBatchEnd is the chief's decision, taken by every worker at that step",
    "[callbacks]") {
  Setup chief_stops;
  chief_stops.callbacks = [](int rank) { return One<StopOnOneWorker>(3, 0, rank); };
  std::vector<WorkerRun> runs = Run(chief_stops);
  RequireAllOk(runs);
  CHECK(runs[0].epochs == 1);
  CHECK(runs[0].examples == 3 * kBatch);

  Setup chief_only;  // Only the chief has the callback: the others still take its decision.
  chief_only.callbacks = [](int rank) {
    std::vector<std::unique_ptr<Callback>> v;
    if (rank == 0) v.push_back(std::make_unique<StopOnOneWorker>(4, 0, rank));
    return v;
  };
  std::vector<WorkerRun> alone = Run(chief_only);
  RequireAllOk(alone);
  CHECK(alone[0].examples == 4 * kBatch);

  Setup other_stops;  // Not the chief: its wish is overruled, nobody hangs.
  other_stops.callbacks = [](int rank) { return One<StopOnOneWorker>(3, 1, rank); };
  std::vector<WorkerRun> all = Run(other_stops);
  RequireAllOk(all);
  CHECK(all[0].epochs == 4);
}

TEST_CASE("ReduceLROnPlateau and LearningRateScheduler change the rate alike on every worker",
          "[callbacks]") {
  Setup plateau;
  plateau.optimizer = {.name = "adam", .learning_rate = 0.004f};
  plateau.callbacks = [](int) {
    return One<ReduceLROnPlateau>(
        ReduceLROnPlateauOptions{.monitor = "loss", .factor = 0.5, .patience = 1, .min_delta = 10});
  };
  std::vector<WorkerRun> runs = Run(plateau);
  RequireAllOk(runs);
  // Epoch 1 sets the best; epochs 2, 3 and 4 each halve the rate.
  CHECK(runs[0].learning_rate == 0.0005f);
  CHECK(runs[0].logged_rates == std::vector<double>{0.004f, 0.004f, 0.002f, 0.001f});

  Setup scheduled;
  scheduled.optimizer = {.name = "sgd", .learning_rate = 0.1f};
  scheduled.callbacks = [](int) {
    return One<LearningRateScheduler>(
        [](int64_t epoch, double rate) { return epoch < 2 ? rate : rate * 0.1; });
  };
  std::vector<WorkerRun> sched = Run(scheduled);
  RequireAllOk(sched);
  CHECK(sched[0].learning_rate == static_cast<float>(static_cast<float>(0.1f * 0.1) * 0.1));
  CHECK(sched[0].logged_rates.size() == 4);

  // A schedule and a callback that sets the rate cannot both steer it.
  Setup both = plateau;
  both.optimizer.learning_rate_schedule = *ExponentialDecay({});
  for (const WorkerRun& run : Run(both)) {
    CHECK_THAT(std::string(run.status.message()), Contains("cannot be set"));
  }
}

TEST_CASE("TerminateOnNaN ends fit after the first step with a NaN loss", "[callbacks]") {
  // A rate of 1e35 makes the weights huge after step 1: step 2's logits overflow.
  Setup setup;
  setup.optimizer = {.name = "sgd", .learning_rate = 1e35f};
  setup.validation = false;
  setup.callbacks = [](int) { return One<TerminateOnNaN>(); };
  std::vector<WorkerRun> runs = Run(setup);
  RequireAllOk(runs);
  CHECK(runs[0].epochs == 1);
  CHECK(runs[0].examples >= 2 * kBatch);
  CHECK(runs[0].examples <= 3 * kBatch);
}

TEST_CASE("CSVLogger writes a header and a row per epoch on the chief only", "[callbacks]") {
  const std::string dir = FreshTestDir("csv_logger");
  Setup setup;
  setup.epochs = 3;
  setup.callbacks = [&](int rank) {
    return One<CSVLogger>(CSVLoggerOptions{.filename = absl::StrCat(dir, "/log", rank, ".csv")});
  };
  RequireAllOk(Run(setup));
  CHECK_FALSE(std::filesystem::exists(dir + "/log1.csv"));
  std::ifstream in(dir + "/log0.csv");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(lines.size() == 4);
  // (slowest_worker/* columns come only when some worker waited for another.)
  CHECK_THAT(lines[0], Catch::StartsWith("epoch,accuracy,loss,"));
  CHECK_THAT(lines[0], Contains(",step_breakdown/compute,"));
  CHECK_THAT(lines[0], Contains(",val_accuracy,val_loss"));
  CHECK_THAT(lines[1], Catch::StartsWith("0,"));
  CHECK_THAT(lines[3], Catch::StartsWith("2,"));

  // append: a second run adds rows under the same header.
  setup.callbacks = [&](int rank) {
    return One<CSVLogger>(
        CSVLoggerOptions{.filename = absl::StrCat(dir, "/log", rank, ".csv"), .append = true});
  };
  RequireAllOk(Run(setup));
  std::ifstream again(dir + "/log0.csv");
  int count = 0, headers = 0;
  for (std::string line; std::getline(again, line); ++count)
    headers += line.rfind("epoch,", 0) == 0;
  CHECK(count == 7);
  CHECK(headers == 1);

  Setup unwritable;
  unwritable.callbacks = [](int) {
    return One<CSVLogger>(CSVLoggerOptions{.filename = "/nonexistent/dir/x.csv"});
  };
  std::vector<WorkerRun> failed = Run(unwritable);
  CHECK_THAT(std::string(failed[0].status.message()),
             Contains("CSVLogger: cannot open /nonexistent/dir/x.csv"));
}

TEST_CASE("gradient clipping keeps replicas identical; workers that clip differently are refused",
          "[callbacks]") {
  Setup clipped;
  clipped.optimizer = {.name = "sgd", .learning_rate = 0.5f};
  clipped.optimizer.clipping.global_clipnorm = 0.01f;
  std::vector<WorkerRun> runs = Run(clipped);
  RequireAllOk(runs);
  Setup unclipped;
  unclipped.optimizer = {.name = "sgd", .learning_rate = 0.5f};
  std::vector<WorkerRun> plain = Run(unclipped);
  RequireAllOk(plain);
  CHECK(runs[0].weights != plain[0].weights);

  LocalCluster::Options options;
  options.num_workers = kWorkers;
  auto results = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
    auto scope = w.strategy->scope();
    Sequential model;
    model.Add(Flatten());
    model.Add(Dense(10));
    CompileOptions compile;
    compile.loss = {"sparse_categorical_crossentropy", true};
    if (w.rank == 1) compile.optimizer.clipping.clipnorm = 1;
    RW_RETURN_IF_ERROR(model.Compile(compile));
    FitOptions fit;
    fit.verbose = 0;
    fit.batch_size = kBatch;
    static const Dataset* train = new Dataset(Dataset::FromExamples(Data().train));
    return model.Fit(*train, fit).status();
  });
  for (const absl::Status& s : results) {
    CHECK(ExitCodeFor(s) == kMismatch);
    CHECK_THAT(std::string(s.message()), Contains("gradient clipping: clipnorm 1"));
  }
}

// Fails every worker as epoch `epoch` (from 0) begins, as a crash would: after
// the backup of the epoch before.
class FailAtEpochBegin : public Callback {
 public:
  explicit FailAtEpochBegin(int64_t epoch) : epoch_(epoch) {}
  bool decides_per_batch() const override { return false; }
  absl::Status OnEpochBegin(int64_t epoch) override {
    return epoch == epoch_ ? PeerError("simulated failure") : absl::OkStatus();
  }

 private:
  int64_t epoch_;
};

TEST_CASE("a run resumed from its backup keeps the rate, the callbacks' state and the schedule",
          "[callbacks][backup]") {
  // Every epoch after the first is a plateau (min_delta 10): the rate halves at
  // the ends of epochs 2 and 4 (patience 1; cooldown 2 holds it through epoch 3, so
  // the backup's cooldown counter decides epoch 3); EarlyStopping stops after epoch 4
  // (patience 3) and goes back to epoch 1's weights.
  auto steering = [](const std::string& dir, int64_t fail_at, bool restore_best) {
    Setup s;
    s.epochs = 6;
    s.optimizer = {.name = "adam", .learning_rate = 0.004f};
    s.callbacks = [=](int) {
      std::vector<std::unique_ptr<Callback>> v;
      // First in the list, as train puts it: fit still ends its epochs last.
      if (!dir.empty())
        v.push_back(std::make_unique<BackupAndRestore>(BackupOptions{.backup_dir = dir}));
      v.push_back(std::make_unique<ReduceLROnPlateau>(ReduceLROnPlateauOptions{
          .monitor = "loss", .factor = 0.5, .patience = 1, .min_delta = 10, .cooldown = 2}));
      v.push_back(std::make_unique<EarlyStopping>(
          EarlyStoppingOptions{.monitor = "val_loss",
                               .min_delta = 10,
                               .patience = 3,
                               .restore_best_weights = restore_best}));
      if (fail_at >= 0) v.push_back(std::make_unique<FailAtEpochBegin>(fail_at));
      return v;
    };
    return s;
  };
  for (bool restore_best : {false, true}) {
    INFO("restore_best_weights " << restore_best);
    std::vector<WorkerRun> expected = Run(steering("", -1, restore_best));
    RequireAllOk(expected);
    CHECK(expected[0].epochs == 4);
    CHECK(expected[0].logged_rates == std::vector<double>{0.004f, 0.004f, 0.002f, 0.002f});
    CHECK(expected[0].learning_rate == 0.001f);
    const std::string dir = FreshTestDir(absl::StrCat("backup_controls_", restore_best));
    // Fails as epoch 3 begins, after epoch 2's decisions and its backup.
    for (const WorkerRun& run : Run(steering(dir, 2, restore_best))) {
      CHECK(ExitCodeFor(run.status) == kPeerFailure);
    }
    std::vector<WorkerRun> resumed = Run(steering(dir, -1, restore_best));
    RequireAllOk(resumed);
    CHECK(resumed[0].epochs == 2);  // Epochs 3 and 4.
    CHECK(resumed[0].logged_rates == std::vector<double>{0.002f, 0.002f});
    CHECK(resumed[0].learning_rate == expected[0].learning_rate);
    CHECK(resumed[0].weights == expected[0].weights);
  }

  // With a schedule instead: the rate continues from the restored iterations.
  auto scheduled = [](const std::string& dir, int64_t fail_at) {
    Setup s;
    s.epochs = 4;
    s.optimizer = {.name = "sgd"};
    s.optimizer.learning_rate_schedule = *CosineDecay(
        {.initial_learning_rate = 0, .decay_steps = 30, .warmup_target = 0.2, .warmup_steps = 10});
    s.callbacks = [dir, fail_at](int) {
      std::vector<std::unique_ptr<Callback>> v;
      if (!dir.empty())
        v.push_back(std::make_unique<BackupAndRestore>(BackupOptions{.backup_dir = dir}));
      if (fail_at >= 0) v.push_back(std::make_unique<FailAtEpochBegin>(fail_at));
      return v;
    };
    return s;
  };
  // A model with moving statistics resumes with them.
  Setup with_bn = scheduled("", -1);
  with_bn.batch_norm = true;
  std::vector<WorkerRun> bn = Run(with_bn);
  RequireAllOk(bn);
  const std::string dir3 = FreshTestDir("backup_batch_norm");
  Setup bn_failing = scheduled(dir3, 2);
  bn_failing.batch_norm = true;
  Run(bn_failing);
  Setup bn_resuming = scheduled(dir3, -1);
  bn_resuming.batch_norm = true;
  std::vector<WorkerRun> bn_resumed = Run(bn_resuming);
  RequireAllOk(bn_resumed);
  CHECK(bn_resumed[0].epochs == 2);
  CHECK(bn_resumed[0].weights == bn[0].weights);

  std::vector<WorkerRun> cosine = Run(scheduled("", -1));
  RequireAllOk(cosine);
  CHECK(cosine[0].logged_rates.size() == 4);
  const std::string dir2 = FreshTestDir("backup_schedule");
  Run(scheduled(dir2, 2));
  std::vector<WorkerRun> cosine_resumed = Run(scheduled(dir2, -1));
  RequireAllOk(cosine_resumed);
  CHECK(cosine_resumed[0].weights == cosine[0].weights);
  CHECK(cosine_resumed[0].learning_rate == cosine[0].learning_rate);
}

// Fails every worker after global step `at` (from 1).
class FailAfterStep : public Callback {
 public:
  explicit FailAfterStep(int64_t at) : at_(at) {}
  bool decides_per_batch() const override { return false; }
  absl::Status OnBatchEnd(int64_t, const Logs&) override {
    return ++done_ == at_ ? PeerError("simulated failure") : absl::OkStatus();
  }

 private:
  int64_t at_, done_ = 0;
};

TEST_CASE("a resume in an epoch's middle does not apply the epoch's LearningRateScheduler twice",
          "[callbacks][backup]") {
  auto halving = [](const std::string& dir, int64_t fail_after) {
    Setup s;
    s.epochs = 3;
    s.optimizer = {.name = "sgd", .learning_rate = 0.2f};
    s.callbacks = [=](int) {
      std::vector<std::unique_ptr<Callback>> v;
      if (!dir.empty()) {
        v.push_back(std::make_unique<BackupAndRestore>(
            BackupOptions{.backup_dir = dir, .save_freq_steps = 5}));
      }
      v.push_back(
          std::make_unique<LearningRateScheduler>([](int64_t, double rate) { return rate * 0.5; }));
      if (fail_after > 0) v.push_back(std::make_unique<FailAfterStep>(fail_after));
      return v;
    };
    return s;
  };
  std::vector<WorkerRun> expected = Run(halving("", 0));
  RequireAllOk(expected);
  CHECK(expected[0].learning_rate == 0.025f);
  const std::string dir = FreshTestDir("backup_scheduler_mid_epoch");
  Run(halving(dir, 17));  // The backup after step 15: epoch 2, step 5.
  std::vector<WorkerRun> resumed = Run(halving(dir, 0));
  RequireAllOk(resumed);
  CHECK(resumed[0].learning_rate == expected[0].learning_rate);
  CHECK(resumed[0].weights == expected[0].weights);
}

// Fails OnTrainEnd, so that the backup is kept (as a SIGTERM at the end would).
class FailTrainEnd : public Callback {
 public:
  bool decides_per_batch() const override { return false; }
  absl::Status OnTrainEnd(const Logs&) override {
    return PeerError("simulated failure at the end");
  }
};

TEST_CASE("a backup written after EarlyStopping stopped training resumes as stopped",
          "[callbacks][backup]") {
  auto stopping = [](const std::string& dir, bool fail_end) {
    Setup s;
    s.epochs = 6;
    s.callbacks = [=](int) {
      std::vector<std::unique_ptr<Callback>> v;
      if (!dir.empty())
        v.push_back(std::make_unique<BackupAndRestore>(BackupOptions{.backup_dir = dir}));
      v.push_back(
          std::make_unique<EarlyStopping>(EarlyStoppingOptions{.min_delta = 10, .patience = 1}));
      if (fail_end) v.push_back(std::make_unique<FailTrainEnd>());
      return v;
    };
    return s;
  };
  std::vector<WorkerRun> expected = Run(stopping("", false));
  RequireAllOk(expected);
  CHECK(expected[0].epochs == 2);
  const std::string dir = FreshTestDir("backup_after_stop");
  for (const WorkerRun& run : Run(stopping(dir, true)))
    CHECK(ExitCodeFor(run.status) == kPeerFailure);
  std::vector<WorkerRun> resumed = Run(stopping(dir, false));
  RequireAllOk(resumed);
  CHECK(resumed[0].epochs == 0);  // Nothing more to train.
  CHECK(resumed[0].weights == expected[0].weights);
}

}  // namespace
}  // namespace ringwork
