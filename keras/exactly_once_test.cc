// Every example once: which example ids each worker trains on at every step of
// fit(), recorded by a layer, for the DATA, FILE and OFF shard policies, uneven
// sizes, 1 to 4 workers, with and without steps_per_epoch over a repeated
// dataset, and across a resume in the middle of an epoch.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "keras/checkpoint_callbacks.h"
#include "keras/record_ids_testing.h"
#include "keras/sequential.h"
#include "testing/local_cluster.h"
#include "testing/temp_dir.h"

namespace ringwork {
namespace {

// `n` examples, id i with features (i, 1), in 5 uneven files (file 0 has a fifth
// more than the others).
Examples Numbered(int64_t n) {
  Examples e;
  e.features = Tensor({n, 2});
  for (int64_t i = 0; i < n; ++i) {
    e.features[2 * i] = static_cast<float>(i);
    e.features[2 * i + 1] = 1.f;
    e.labels.push_back(static_cast<int32_t>(i % 10));
    e.file_index.push_back(i % 5 == 0 || i % 7 == 0 ? 0 : static_cast<int32_t>(1 + i % 4));
  }
  for (int f = 0; f < 5; ++f) e.files.push_back("f" + std::to_string(f));
  return e;
}

struct Run {
  std::vector<Record> records;  // By rank.
  std::vector<std::vector<int64_t>> examples_per_epoch;
  std::vector<absl::Status> results;
};

Run Train(int workers, AutoShardPolicy policy, int64_t n, const FitOptions& base, int64_t repeat,
          const std::function<std::vector<Callback*>(int rank)>& callbacks = nullptr) {
  Run run;
  run.records.resize(static_cast<size_t>(workers));
  run.examples_per_epoch.resize(static_cast<size_t>(workers));
  const Dataset data = Dataset::FromExamples(Numbered(n)).Repeat(repeat);
  LocalCluster::Options options;
  options.num_workers = workers;
  run.results = LocalCluster::Run(options, [&](LocalCluster::Worker& w) -> absl::Status {
    auto scope = w.strategy->scope();
    Sequential model;
    model.Add(std::make_unique<RecordIds>(&run.records[static_cast<size_t>(w.rank)]));
    model.Add(Dense(10));
    CompileOptions compile;
    compile.loss = {"sparse_categorical_crossentropy", true};
    compile.intra_op_threads = 1;
    RW_RETURN_IF_ERROR(model.Compile(compile));
    FitOptions fit = base;
    fit.shard_policy = policy;
    fit.verbose = 0;
    if (callbacks) fit.callbacks = callbacks(w.rank);
    RW_ASSIGN_OR_RETURN(History history, model.Fit(data, fit));
    run.examples_per_epoch[static_cast<size_t>(w.rank)] = history.examples_per_epoch();
    return absl::OkStatus();
  });
  return run;
}

// The ids of global steps [first, last), over the ranks in `ranks`.
std::vector<int64_t> Ids(const Run& run, const std::vector<int>& ranks, int64_t first,
                         int64_t last) {
  std::vector<int64_t> ids;
  for (int r : ranks) {
    for (const auto& [step, at] : run.records[static_cast<size_t>(r)]) {
      if (step >= first && step < last) ids.insert(ids.end(), at.begin(), at.end());
    }
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<int64_t> AllIds(int64_t n) {
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = i;
  return ids;
}

std::vector<int> Ranks(int workers) {
  std::vector<int> ranks(static_cast<size_t>(workers));
  for (int r = 0; r < workers; ++r) ranks[static_cast<size_t>(r)] = r;
  return ranks;
}

constexpr int64_t kExamples = 103;  // Leaves a short last batch for every batch size here.
constexpr int64_t kPerReplica = 5;

TEST_CASE("each epoch trains on every example exactly once (DATA, FILE; 1 to 4 workers)",
          "[exactly_once]") {
  for (AutoShardPolicy policy : {AutoShardPolicy::kData, AutoShardPolicy::kFile}) {
    for (int workers = 1; workers <= 4; ++workers) {
      INFO(AutoShardPolicyName(policy) << ", " << workers << " workers");
      FitOptions fit;
      fit.epochs = 2;
      fit.batch_size = kPerReplica * workers;
      Run run = Train(workers, policy, kExamples, fit, 1);
      for (const absl::Status& s : run.results) REQUIRE(s.ok());
      // The steps of an epoch: the most batches any worker had.
      int64_t steps = 0;
      for (const Record& r : run.records) {
        if (!r.empty()) steps = std::max(steps, r.rbegin()->first + 1);
      }
      steps /= 2;
      for (int64_t epoch = 0; epoch < 2; ++epoch) {
        CHECK(Ids(run, Ranks(workers), epoch * steps, (epoch + 1) * steps) == AllIds(kExamples));
      }
      for (const auto& counts : run.examples_per_epoch) {
        CHECK(counts == std::vector<int64_t>{kExamples, kExamples});
      }
    }
  }
}

TEST_CASE("with OFF every worker reads all of its data, in its own order", "[exactly_once]") {
  for (int workers = 2; workers <= 3; ++workers) {
    FitOptions fit;
    fit.epochs = 1;
    fit.batch_size = kPerReplica * workers;
    Run run = Train(workers, AutoShardPolicy::kOff, kExamples, fit, 1);
    for (const absl::Status& s : run.results) REQUIRE(s.ok());
    for (int r = 0; r < workers; ++r) CHECK(Ids(run, {r}, 0, 1 << 20) == AllIds(kExamples));
    // Orders differ: the first batches of rank 0 and rank 1.
    CHECK(run.records[0].begin()->second != run.records[1].begin()->second);
    CHECK(run.examples_per_epoch[0] == std::vector<int64_t>{kExamples * workers});
  }
}

TEST_CASE("steps_per_epoch over a repeated dataset: one stream, pass after pass",
          "[exactly_once]") {
  for (AutoShardPolicy policy : {AutoShardPolicy::kData, AutoShardPolicy::kFile}) {
    const int workers = 3;
    FitOptions fit;
    fit.batch_size = kPerReplica * workers;  // A pass is 7 steps at most.
    fit.epochs = 5;
    fit.steps_per_epoch = 4;  // 20 steps: more than two passes, epochs cut across them.
    Run run = Train(workers, policy, kExamples, fit, /*repeat=*/-1);
    for (const absl::Status& s : run.results) REQUIRE(s.ok());
    int64_t pass_steps = 0;  // Steps of a pass: where the ids first repeat.
    std::vector<int64_t> seen;
    for (int64_t step = 0; step < 20; ++step) {
      std::vector<int64_t> at = Ids(run, Ranks(workers), step, step + 1);
      seen.insert(seen.end(), at.begin(), at.end());
      std::sort(seen.begin(), seen.end());
      if (seen == AllIds(kExamples)) {
        pass_steps = step + 1;
        break;
      }
    }
    INFO(AutoShardPolicyName(policy));
    REQUIRE(pass_steps > 0);
    // Every complete pass has every example once; the rest of the stream none twice.
    for (int64_t first = 0; first + pass_steps <= 20; first += pass_steps) {
      CHECK(Ids(run, Ranks(workers), first, first + pass_steps) == AllIds(kExamples));
    }
    const int64_t tail = 20 / pass_steps * pass_steps;
    std::vector<int64_t> rest = Ids(run, Ranks(workers), tail, 20);
    CHECK(std::adjacent_find(rest.begin(), rest.end()) == rest.end());
    // Epochs of exactly 4 steps, not a pass each.
    for (const auto& counts : run.examples_per_epoch) CHECK(counts.size() == 5);
  }
}

TEST_CASE("more steps than the data gives, without Repeat, is refused", "[exactly_once]") {
  FitOptions fit;
  fit.batch_size = 10;
  fit.epochs = 3;
  fit.steps_per_epoch = 5;  // 15 steps; one pass of 103 examples has 11.
  Run run = Train(2, AutoShardPolicy::kData, kExamples, fit, 1);
  for (const absl::Status& s : run.results) {
    INFO(s.message());
    CHECK(absl::IsInvalidArgument(s));
    CHECK(s.message().find("Repeat() the dataset") != absl::string_view::npos);
  }
}

// Fails every worker after global step `at` (as a crash would, in-process).
class FailAfter : public Callback {
 public:
  explicit FailAfter(int64_t at) : at_(at) {}
  absl::Status OnTrainBegin(const TrainInfo& info) override {
    steps_ = info.steps_per_epoch;
    return absl::OkStatus();
  }
  absl::Status OnEpochBegin(int64_t epoch) override {
    epoch_ = epoch;
    return absl::OkStatus();
  }
  absl::Status OnBatchEnd(int64_t step, const Logs&) override {
    if (epoch_ * steps_ + step == at_) return absl::UnavailableError("simulated failure");
    return absl::OkStatus();
  }

 private:
  int64_t at_, steps_ = 0, epoch_ = 0;
};

TEST_CASE("a run resumed in the middle of an epoch trains the examples it would have",
          "[exactly_once]") {
  for (AutoShardPolicy policy : {AutoShardPolicy::kData, AutoShardPolicy::kFile}) {
    INFO(AutoShardPolicyName(policy));
    const int workers = 2;
    FitOptions fit;
    fit.epochs = 2;
    fit.batch_size = kPerReplica * workers;  // 11 (DATA) or 12 (FILE) steps an epoch.
    Run uninterrupted = Train(workers, policy, kExamples, fit, 1);
    for (const absl::Status& s : uninterrupted.results) REQUIRE(s.ok());
    int64_t steps = 0;
    for (const Record& r : uninterrupted.records) steps = std::max(steps, r.rbegin()->first + 1);
    steps /= 2;
    const std::string dir =
        FreshTestDir(absl::StrCat("exactly_once_", AutoShardPolicyName(policy)));
    // Each worker's callbacks (made on its own thread), kept until the runs end.
    std::vector<std::vector<std::unique_ptr<Callback>>> owned(workers);
    auto with_backup = [&](bool fail) {
      return [&, fail](int rank) {
        auto& mine = owned[static_cast<size_t>(rank)];
        mine.push_back(std::make_unique<BackupAndRestore>(
            BackupOptions{.backup_dir = dir, .save_freq_steps = 5}));
        std::vector<Callback*> callbacks = {mine.back().get()};
        if (fail) {
          mine.push_back(std::make_unique<FailAfter>(17));  // Backed up at 15: mid-epoch 2.
          callbacks.push_back(mine.back().get());
        }
        return callbacks;
      };
    };
    Run failed = Train(workers, policy, kExamples, fit, 1, with_backup(true));
    for (const absl::Status& s : failed.results) REQUIRE(!s.ok());
    for (auto& mine : owned) mine.clear();  // A failed job's process ends: its lock goes.
    Run resumed = Train(workers, policy, kExamples, fit, 1, with_backup(false));
    for (const absl::Status& s : resumed.results) {
      INFO(s.message());
      REQUIRE(s.ok());
    }
    for (int r = 0; r < workers; ++r) {
      // It trained steps 15.. only, each on what the uninterrupted run did.
      REQUIRE(!resumed.records[r].empty());
      CHECK(resumed.records[r].begin()->first >= 15);
      for (const auto& [step, ids] : resumed.records[r]) {
        INFO("rank " << r << " step " << step);
        CHECK(ids == uninterrupted.records[r][step]);
      }
    }
    // The second epoch: its steps up to 15 in the failed run, the rest in the
    // resumed one: every example once.
    std::vector<int64_t> epoch2 = Ids(failed, Ranks(workers), steps, 15);
    std::vector<int64_t> later = Ids(resumed, Ranks(workers), 15, 2 * steps);
    epoch2.insert(epoch2.end(), later.begin(), later.end());
    std::sort(epoch2.begin(), epoch2.end());
    CHECK(epoch2 == AllIds(kExamples));
  }
}

}  // namespace
}  // namespace ringwork
