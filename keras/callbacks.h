// Callbacks that fit() calls, as Keras': History (returned by fit) and the
// progress bar (on the chief only, so a cluster prints one bar). The values a
// callback sees are global: averaged over every replica so far this epoch. A hook
// that fails stops fit() with its status. Checkpoint callbacks (ModelCheckpoint,
// BackupAndRestore) are in checkpoint_callbacks.h.
//
//   class PrintLoss : public Callback {
//    public:
//     absl::Status OnEpochEnd(int64_t epoch, const Logs& logs) override {
//       std::printf("epoch %lld: loss %.4f\n", static_cast<long long>(epoch), logs.at("loss"));
//       return absl::OkStatus();
//     }
//   };
//   PrintLoss print_loss;
//   fit.callbacks = {&print_loss};  // model.Fit(train, fit) returns the History
#ifndef RINGWORK_KERAS_CALLBACKS_H_
#define RINGWORK_KERAS_CALLBACKS_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "data/dataset.h"

namespace ringwork {

class Model;

// "loss", "accuracy", "val_loss", ... -> value. At an epoch's end fit adds where
// the steps' time went (keras/step_breakdown.h): "step_breakdown/..." and
// "slowest_worker/...", and what a streamed input did (keras/input_report.h):
// "input_pipeline/...", figures of the run rather than metrics of the model.
using Logs = std::map<std::string, double>;
inline bool IsTimingLog(const std::string& name) {
  return name.rfind("step_breakdown/", 0) == 0 || name.rfind("slowest_worker/", 0) == 0 ||
         name.rfind("input_pipeline/", 0) == 0;
}

// State that steers training besides the weights (the learning rate, callbacks'
// counters), by name, as checkpoints keep it.
using TrainingControls = std::map<std::string, std::vector<double>>;

struct TrainInfo {
  int64_t epochs = 0;
  int64_t steps_per_epoch = 0;
  int64_t global_batch_size = 0;
  int replicas = 1;
  bool is_chief = true;
  AutoShardPolicy shard_policy = AutoShardPolicy::kData;
  uint64_t shuffle_seed = 0;      // As agreed (the chief's).
  int64_t examples_per_pass = 0;  // Over every worker.
};

// Where training is: `step` steps done in all, the next one being step
// `step_in_epoch` (from 0) of `epoch` (from 0).
struct TrainPosition {
  int64_t epoch = 0;
  int64_t step_in_epoch = 0;
  int64_t step = 0;  // Steps done in all.
  // Where the next step's examples begin (DATA: pass, examples of it done), when
  // the steps do not say it: after elastic training with a per-replica batch
  // changed the global batch. -1: the steps say it.
  int64_t data_pass = -1;
  int64_t data_offset = -1;
};

class Callback {
 public:
  virtual ~Callback() = default;
  // The model being fitted (Keras' `callback.model`); set before OnTrainBegin.
  void set_model(Model* model) { model_ = model; }
  virtual absl::Status OnTrainBegin(const TrainInfo& info) { return absl::OkStatus(); }
  virtual absl::Status OnEpochBegin(int64_t epoch) { return absl::OkStatus(); }
  // After step `step` (from 1) of the current epoch.
  virtual absl::Status OnBatchEnd(int64_t step, const Logs& logs) { return absl::OkStatus(); }
  virtual absl::Status OnEpochEnd(int64_t epoch, const Logs& logs) { return absl::OkStatus(); }
  virtual absl::Status OnTrainEnd(const Logs& last_epoch) { return absl::OkStatus(); }
  // After every callback's OnTrainEnd succeeded on every worker (the final
  // checkpoint is durable) and no worker received SIGTERM meanwhile: what guarded
  // the run can go (BackupAndRestore removes its backup here).
  virtual absl::Status OnTrainCommitted() { return absl::OkStatus(); }
  // A worker received SIGTERM: every worker stops after this step, at `next`.
  virtual absl::Status OnPreempted(const TrainPosition& next) { return absl::OkStatus(); }
  // Elastic training: workers left and the survivors regrouped (fit goes on from
  // the last step any of them completed). `info` has the new number of replicas
  // and whether this worker is now the chief (the old one may have left).
  virtual absl::Status OnRegroup(const TrainInfo& info) { return absl::OkStatus(); }

  // Decisions. A callback may stop training (Model::set_stop_training, Keras'
  // `model.stop_training = True`) or change the optimizer's learning rate; fit
  // then takes the chief's decision on every worker (a small all-reduce after each
  // epoch's begin and end callbacks), so no worker is left alone in a collective.
  // Whether this callback may decide in OnBatchEnd: fit then also takes the
  // chief's decision after every step. The callbacks of this library that decide
  // only per epoch (or never) say false; a callback of yours that never decides
  // may too, to save that broadcast.
  virtual bool decides_per_batch() const { return true; }
  // Whether it changes the learning rate: fit then logs "learning_rate" per epoch.
  virtual bool changes_learning_rate() const { return false; }
  // Whether it writes checkpoints: fit then runs its OnBatchEnd and OnEpochEnd
  // after every other callback's and after the decisions are agreed.
  virtual bool saves_checkpoints() const { return false; }

  // State that BackupAndRestore keeps with the weights and gives back on resume,
  // after every callback's OnTrainBegin (EarlyStopping's best value and patience
  // count, ...). `state_name` is unique among one fit's callbacks ("" for none).
  virtual std::string state_name() const { return ""; }
  virtual std::vector<double> SaveState() const { return {}; }
  virtual absl::Status RestoreState(const std::vector<double>& state) { return absl::OkStatus(); }

 protected:
  Model* model_ = nullptr;
};

class History : public Callback {
 public:
  bool decides_per_batch() const override { return false; }
  absl::Status OnEpochEnd(int64_t epoch, const Logs& logs) override;
  // Per metric, one value per epoch.
  const std::map<std::string, std::vector<double>>& history() const { return history_; }
  std::vector<double> operator[](const std::string& metric) const;
  // Examples trained on in each epoch run, over every worker (fit counts them).
  void AddEpochExamples(int64_t examples) { examples_per_epoch_.push_back(examples); }
  const std::vector<int64_t>& examples_per_epoch() const { return examples_per_epoch_; }

 private:
  std::map<std::string, std::vector<double>> history_;
  std::vector<int64_t> examples_per_epoch_;
};

// Keras' progress bar: "120/469 [=======>......] - ETA: 3s - loss: 0.61 - accuracy:
// 0.78 - 21733 samples/s". Redrawn in place on a terminal; elsewhere (logs, launch)
// a line every `line_interval_s` and at the end of each epoch.
class ProgressBar : public Callback {
 public:
  explicit ProgressBar(std::FILE* out = stdout, double line_interval_s = 5);
  bool decides_per_batch() const override { return false; }
  absl::Status OnTrainBegin(const TrainInfo& info) override;
  absl::Status OnEpochBegin(int64_t epoch) override;
  absl::Status OnBatchEnd(int64_t step, const Logs& logs) override;
  absl::Status OnEpochEnd(int64_t epoch, const Logs& logs) override;

 private:
  std::string Line(int64_t step, const Logs& logs, bool final) const;
  int64_t EpochSteps() const;  // This epoch's (they follow the ring with a per-replica batch).

  std::FILE* out_;
  const bool terminal_;
  const double line_interval_s_;
  TrainInfo info_;
  std::chrono::steady_clock::time_point epoch_start_, last_line_;
  int64_t first_step_ = -1;  // Steps of this epoch done before this run (resumed).
};

}  // namespace ringwork

#endif  // RINGWORK_KERAS_CALLBACKS_H_
