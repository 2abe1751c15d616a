// Keras' checkpoint callbacks for fit().
//
// ModelCheckpoint keeps checkpoints of the training state in a directory (the
// newest `keep`), every epoch or every N steps, and a final one marked final (what
// a sidecar evaluator waits for); or, as Keras' ModelCheckpoint("ckpt.keras"),
// the model in a file other tools read (keras/keras_archive.h).
//
// BackupAndRestore makes a job survive a crash or a preemption: at the start of
// fit it restores the last backup (weights, optimizer, data position) if there is
// one and fit resumes there; it backs up every epoch or every N steps; on SIGTERM
// every worker stops at the next step boundary after a backup (exit 143); when fit
// completes, and every other callback has ended (the final checkpoint is durable),
// the backup is removed (a SIGTERM or a failure before that keeps it). Rerunning the same job after
// a failure ends with the same weights as a run that never failed.
//
//   BackupAndRestore backup({.backup_dir = "/ckpt/backup", .save_freq_steps = 100});
//   ModelCheckpoint checkpoints({.directory = "/ckpt/models"});
//   ModelCheckpoint keras({.filepath = "/ckpt/model-{epoch:02d}.keras"});
//   FitOptions fit;
//   fit.epochs = 10;
//   fit.batch_size = 256;
//   fit.callbacks = {&backup, &checkpoints, &keras};
//   RW_RETURN_IF_ERROR(model.Fit(train, fit).status());
//
// Only the chief writes (and holds the directory's lock); every worker must use
// the same callbacks, since restoring is collective.
#ifndef RINGWORK_KERAS_CHECKPOINT_CALLBACKS_H_
#define RINGWORK_KERAS_CHECKPOINT_CALLBACKS_H_

#include <memory>
#include <string>

#include "base/termination.h"
#include "checkpoint/checkpoint_directory.h"
#include "keras/callbacks.h"

namespace ringwork {

struct ModelCheckpointOptions {
  std::string directory;
  // Keras' filepath: instead of a directory, the whole model as a Keras 3
  // archive (PATH ending in .keras) or its weights (.weights.h5), written over
  // at each save; {epoch} or {epoch:02d} in it becomes the epochs done, so
  // that each epoch keeps its own file. The final save is the last epoch's.
  std::string filepath;
  int64_t save_freq_steps = 0;  // 0: at the end of every epoch.
  int keep = 5;
};

class ModelCheckpoint : public Callback {
 public:
  explicit ModelCheckpoint(ModelCheckpointOptions options) : options_(std::move(options)) {}
  absl::Status OnTrainBegin(const TrainInfo& info) override;
  bool decides_per_batch() const override { return false; }
  bool saves_checkpoints() const override { return true; }
  absl::Status OnBatchEnd(int64_t step, const Logs& logs) override;
  absl::Status OnEpochEnd(int64_t epoch, const Logs& logs) override;
  absl::Status OnTrainEnd(const Logs& last_epoch) override;
  // A worker that becomes the chief takes over the directory.
  absl::Status OnRegroup(const TrainInfo& info) override;
  // The newest checkpoint written (on the chief).
  const std::string& last_path() const { return last_path_; }

 private:
  absl::Status Save(const TrainPosition& position, bool final);
  absl::Status SaveFile(int64_t epoch);

  ModelCheckpointOptions options_;
  TrainInfo info_;
  TrainPosition last_{};
  std::unique_ptr<CheckpointDirectory> dir_;  // The chief's.
  bool paused_ = false;                       // A new chief could not take the directory over yet.
  std::string last_path_;
};

// What a backup written with other settings (global batch, steps per epoch, or
// for FILE and OFF the shard policy and workers) resumes as: kExact refuses (exit
// 7 naming both values), since its position would name other examples; kEpoch
// resumes at the next epoch boundary with a warning.
enum class ResumePolicy { kExact, kEpoch };

struct BackupOptions {
  std::string backup_dir;
  int64_t save_freq_steps = 0;    // 0: at the end of every epoch.
  bool delete_checkpoint = true;  // Remove the backup when fit completes.
  ResumePolicy resume_policy = ResumePolicy::kExact;
};

class BackupAndRestore : public Callback {
 public:
  explicit BackupAndRestore(BackupOptions options) : options_(std::move(options)) {}
  absl::Status OnTrainBegin(const TrainInfo& info) override;
  bool decides_per_batch() const override { return false; }
  bool saves_checkpoints() const override { return true; }
  absl::Status OnBatchEnd(int64_t step, const Logs& logs) override;
  absl::Status OnEpochEnd(int64_t epoch, const Logs& logs) override;
  absl::Status OnPreempted(const TrainPosition& next) override;
  absl::Status OnTrainCommitted() override;
  // A worker that becomes the chief takes over the directory.
  absl::Status OnRegroup(const TrainInfo& info) override;
  // Whether this fit resumed from a backup, and where.
  bool restored() const { return restored_; }
  const TrainPosition& restored_at() const { return restored_at_; }

 private:
  absl::Status Save(const TrainPosition& position);

  BackupOptions options_;
  TrainInfo info_;
  bool restored_ = false;
  TrainPosition restored_at_{};
  std::unique_ptr<CheckpointDirectory> dir_;  // The chief's.
  bool paused_ = false;                       // A new chief could not take the directory over yet.
  std::unique_ptr<ScopedTerminationHandler> sigterm_;
};

}  // namespace ringwork

#endif  // RINGWORK_KERAS_CHECKPOINT_CALLBACKS_H_
