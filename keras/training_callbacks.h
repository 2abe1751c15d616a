// The callbacks that steer training, with Keras' names, arguments and rules:
// EarlyStopping, ReduceLROnPlateau, LearningRateScheduler, TerminateOnNaN, and
// CSVLogger (one row per epoch, written by the chief).
//
//   EarlyStopping stop({.monitor = "val_loss", .patience = 3, .restore_best_weights = true});
//   ReduceLROnPlateau plateau({.monitor = "val_loss", .factor = 0.5, .patience = 2});
//   CSVLogger csv({.filename = "/tmp/train.csv"});
//   fit.callbacks = {&stop, &plateau, &csv};
//
// Give every worker the same callbacks. Their decisions depend only on the logs
// fit hands them, which are the same on every worker; fit still applies the
// chief's (callbacks.h), and BackupAndRestore
// keeps their state (best value, patience and cooldown counts, best weights), so a
// resumed run decides as the uninterrupted one would. A monitored value missing
// from the logs is an error naming the ones present.
#ifndef RINGWORK_KERAS_TRAINING_CALLBACKS_H_
#define RINGWORK_KERAS_TRAINING_CALLBACKS_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "keras/callbacks.h"

namespace ringwork {

// Keras' `mode`: kAuto watches accuracy ("acc" in the name) and AUC for
// increases, anything else for decreases.
enum class MonitorMode { kAuto, kMin, kMax };

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  double min_delta = 0;  // A change smaller than this is no improvement.
  int64_t patience = 0;  // Epochs without improvement before stopping.
  MonitorMode mode = MonitorMode::kAuto;
  // Training stops unless the monitored value beats this (NaN: no baseline).
  double baseline = std::numeric_limits<double>::quiet_NaN();
  bool restore_best_weights = false;  // When it stops: the best epoch's weights.
  int64_t start_from_epoch = 0;       // Epochs of warm-up that are not watched.
  bool verbose = true;                // A line on the chief when it stops.
};

class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options);
  bool decides_per_batch() const override { return false; }
  absl::Status OnTrainBegin(const TrainInfo& info) override;
  absl::Status OnEpochEnd(int64_t epoch, const Logs& logs) override;
  std::string state_name() const override { return "EarlyStopping"; }
  std::vector<double> SaveState() const override;
  absl::Status RestoreState(const std::vector<double>& state) override;
  // The epoch (from 0) at which it stopped training; 0 if it did not.
  int64_t stopped_epoch() const { return stopped_epoch_; }
  int64_t best_epoch() const { return best_epoch_; }

 private:
  bool Improves(double value, double reference) const;

  EarlyStoppingOptions options_;
  bool maximize_ = false;
  int64_t wait_ = 0, stopped_epoch_ = 0, best_epoch_ = 0;
  double best_ = 0;
  std::vector<std::vector<float>> best_weights_;  // Empty until the first watched epoch.
};

struct ReduceLROnPlateauOptions {
  std::string monitor = "val_loss";
  double factor = 0.1;    // The new rate is the old one times this (< 1).
  int64_t patience = 10;  // Epochs without improvement before reducing.
  MonitorMode mode = MonitorMode::kAuto;
  double min_delta = 1e-4;
  int64_t cooldown = 0;  // Epochs after a reduction during which nothing counts.
  double min_lr = 0;
  bool verbose = true;
};

class ReduceLROnPlateau : public Callback {
 public:
  explicit ReduceLROnPlateau(ReduceLROnPlateauOptions options);
  bool decides_per_batch() const override { return false; }
  bool changes_learning_rate() const override { return true; }
  absl::Status OnTrainBegin(const TrainInfo& info) override;
  absl::Status OnEpochEnd(int64_t epoch, const Logs& logs) override;
  std::string state_name() const override { return "ReduceLROnPlateau"; }
  std::vector<double> SaveState() const override;
  absl::Status RestoreState(const std::vector<double>& state) override;

 private:
  ReduceLROnPlateauOptions options_;
  bool maximize_ = false;
  int64_t wait_ = 0, cooldown_counter_ = 0;
  double best_ = 0;
};

// At each epoch's begin the learning rate becomes schedule(epoch, current rate)
// (epoch from 0), as Keras' LearningRateScheduler.
class LearningRateScheduler : public Callback {
 public:
  using Schedule = std::function<double(int64_t epoch, double learning_rate)>;
  explicit LearningRateScheduler(Schedule schedule, bool verbose = false)
      : schedule_(std::move(schedule)), verbose_(verbose) {}
  bool decides_per_batch() const override { return false; }
  bool changes_learning_rate() const override { return true; }
  absl::Status OnEpochBegin(int64_t epoch) override;

 private:
  Schedule schedule_;
  bool verbose_;
};

// Stops training after the first step whose loss is NaN or infinite.
class TerminateOnNaN : public Callback {
 public:
  absl::Status OnBatchEnd(int64_t step, const Logs& logs) override;
};

struct CSVLoggerOptions {
  std::string filename;
  char separator = ',';
  // Add to an existing file (no second header) instead of replacing it: what a
  // run resumed by BackupAndRestore wants.
  bool append = false;
};

// One row per epoch: "epoch" (from 0, as Keras) and every log in name order; a
// log missing in a later epoch is written as NA. Only the chief writes; each row
// is flushed when written. Every worker must have it (they learn at the start
// whether the chief could open the file: exit 2 if not); a failed write later
// is a warning, and the rows stop.
class CSVLogger : public Callback {
 public:
  explicit CSVLogger(CSVLoggerOptions options) : options_(std::move(options)) {}
  ~CSVLogger() override;
  bool decides_per_batch() const override { return false; }
  absl::Status OnTrainBegin(const TrainInfo& info) override;
  // Elastic training: a worker that became the chief appends the next rows.
  absl::Status OnRegroup(const TrainInfo& info) override;
  absl::Status OnEpochEnd(int64_t epoch, const Logs& logs) override;
  absl::Status OnTrainEnd(const Logs& last_epoch) override;

 private:
  std::string Failure(const char* doing) const;
  // Opens the file for appending; whether it has a header already (and, with
  // `keys_from_header`, its columns become this logger's).
  absl::Status OpenForAppending(bool keys_from_header = false);
  void StopWriting(const char* doing);

  CSVLoggerOptions options_;
  std::FILE* file_ = nullptr;  // The chief's, while training.
  bool header_written_ = false;
  bool stopped_ = false;  // A write failed: no more rows.
  std::vector<std::string> keys_;
};

}  // namespace ringwork

#endif  // RINGWORK_KERAS_TRAINING_CALLBACKS_H_
