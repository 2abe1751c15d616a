#include "keras/checkpoint_callbacks.h"

#include <regex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "keras/keras_archive.h"
#include "keras/model.h"
#include "keras/training_state.h"

namespace ringwork {
namespace {

// The chief opens (and locks) the directory; other workers write nothing, but
// every worker learns whether the chief could (a locked directory fails them all).
absl::StatusOr<std::unique_ptr<CheckpointDirectory>> OpenOnChief(Model& model,
                                                                 const std::string& dir, int keep) {
  absl::StatusOr<std::unique_ptr<CheckpointDirectory>> opened =
      std::unique_ptr<CheckpointDirectory>();
  if (dir.empty()) {
    opened = absl::InvalidArgumentError("a checkpoint callback needs a directory");
  } else if (model.strategy()->is_chief()) {
    opened = CheckpointDirectory::OpenForWriting(dir, keep);
  }
  RW_RETURN_IF_ERROR(model.strategy()->ShareChiefStatus(opened.status()));
  return opened;
}

// After an elastic regroup (and at each save while that failed): a worker that
// became the chief opens the directory, whose lock the old chief left with it.
// Whether it could, on every worker alike; an error only when the ring failed.
// An old chief that was stopped, not killed, still holds the lock until it
// resumes and exits (fenced): until then saves are skipped, loudly.
absl::StatusOr<bool> TakeOverDirectory(Model& model, const std::string& dir, int keep,
                                       std::unique_ptr<CheckpointDirectory>* opened) {
  absl::Status status;
  if (model.strategy()->is_chief() && *opened == nullptr) {
    absl::StatusOr<std::unique_ptr<CheckpointDirectory>> directory =
        CheckpointDirectory::OpenForWriting(dir, keep);
    if (directory.ok()) {
      *opened = std::move(*directory);
      // Never behind what the chief before wrote (the step is part of the check).
      (*opened)->RefuseStepsBefore(CheckpointDirectory::LatestStep(dir));
      RW_LOG(INFO) << "this worker is the chief now: it writes the checkpoints in " << dir;
    } else {
      status = directory.status();
    }
  }
  const absl::Status shared = model.strategy()->ShareChiefStatus(status);
  if (shared.ok()) return true;
  if (model.strategy()->ring_failed() || IsPeerFailure(shared)) return shared;
  if (model.strategy()->is_chief()) {
    RW_LOG(WARNING) << "elastic training: no checkpoints in " << dir << " yet: " << status.message()
                    << " (a previous chief that was stopped, not killed, "
                    << "holds its lock until it resumes and exits); every save tries again and "
                    << "is skipped until then";
  }
  return false;
}

// Keras' filepath formatting, for the one key that does not need the logs:
// {epoch}, {epoch:Nd} (padded with spaces) and {epoch:0Nd} (with zeros).
std::string FormatEpoch(const std::string& pattern, int64_t epoch) {
  static const std::regex key("\\{epoch(:(0?)([0-9]{1,2})d)?\\}");
  std::string out;
  std::sregex_iterator it(pattern.begin(), pattern.end(), key), end;
  size_t from = 0;
  for (; it != end; ++it) {
    out += pattern.substr(from, static_cast<size_t>(it->position()) - from);
    std::string digits = std::to_string(epoch);
    const size_t width = (*it)[3].matched ? std::stoul((*it)[3].str()) : 0;
    const char pad = (*it)[2].length() > 0 ? '0' : ' ';
    if (digits.size() < width) digits.insert(0, width - digits.size(), pad);
    out += digits;
    from = static_cast<size_t>(it->position() + it->length());
  }
  return out + pattern.substr(from);
}

// Keras numbers a save by the epoch it belongs to, from 1: the epochs done at an
// epoch's end, the one under way in the middle of it.
int64_t KerasEpoch(const TrainPosition& at) { return at.epoch + (at.step_in_epoch > 0 ? 1 : 0); }

}  // namespace

absl::Status ModelCheckpoint::OnTrainBegin(const TrainInfo& info) {
  info_ = info;
  if (!options_.filepath.empty()) {
    if (!absl::EndsWith(options_.filepath, ".keras") &&
        !absl::EndsWith(options_.filepath, ".weights.h5")) {
      return absl::InvalidArgumentError(absl::StrCat("ModelCheckpoint filepath ", options_.filepath,
                                                     " must end in .keras or .weights.h5"));
    }
    return absl::OkStatus();
  }
  RW_ASSIGN_OR_RETURN(dir_, OpenOnChief(*model_, options_.directory, options_.keep));
  return absl::OkStatus();
}

absl::Status ModelCheckpoint::SaveFile(int64_t epoch) {
  const std::string path = FormatEpoch(options_.filepath, epoch);
  RW_RETURN_IF_ERROR(absl::EndsWith(path, ".keras") ? SaveKerasArchive(*model_, path)
                                                    : model_->SaveWeights(path));
  last_path_ = path;
  return absl::OkStatus();
}

absl::Status ModelCheckpoint::OnRegroup(const TrainInfo& info) {
  info_ = info;
  if (!options_.filepath.empty()) return absl::OkStatus();  // Whoever is chief writes.
  RW_ASSIGN_OR_RETURN(const bool usable,
                      TakeOverDirectory(*model_, options_.directory, options_.keep, &dir_));
  paused_ = !usable;
  return absl::OkStatus();
}

absl::Status ModelCheckpoint::Save(const TrainPosition& position, bool final) {
  if (!options_.filepath.empty()) return SaveFile(KerasEpoch(position));
  if (paused_) {
    RW_ASSIGN_OR_RETURN(const bool usable,
                        TakeOverDirectory(*model_, options_.directory, options_.keep, &dir_));
    paused_ = !usable;
    if (paused_) return absl::OkStatus();
  }
  RW_ASSIGN_OR_RETURN(std::string path,
                      SaveTrainingState(*model_, dir_.get(), position, final, &info_));
  if (!path.empty()) last_path_ = path;
  last_ = position;
  return absl::OkStatus();
}

// The last step is saved once, by OnTrainEnd, marked final.
absl::Status ModelCheckpoint::OnBatchEnd(int64_t, const Logs&) {
  const TrainPosition& at = model_->fit_position();
  const bool last = at.epoch == info_.epochs;
  if (options_.save_freq_steps > 0 && at.step % options_.save_freq_steps == 0 && !last) {
    return Save(at, false);
  }
  return absl::OkStatus();
}

absl::Status ModelCheckpoint::OnEpochEnd(int64_t epoch, const Logs&) {
  if (options_.save_freq_steps > 0 || epoch + 1 == info_.epochs) return absl::OkStatus();
  return Save(model_->fit_position(), false);
}

absl::Status ModelCheckpoint::OnTrainEnd(const Logs&) {
  // Keras' filepath: the last epoch run (EarlyStopping may end before the last asked).
  if (!options_.filepath.empty()) return SaveFile(KerasEpoch(model_->fit_position()));
  // The final state, marked final: a sidecar evaluator stops after it.
  // Also after a stop: the last state of this training, numbered as if every
  // epoch ran (unless a per-replica batch changed the steps: then the steps done).
  TrainPosition end = model_->fit_position();
  if (end.data_pass < 0) end.step = info_.epochs * info_.steps_per_epoch;
  end.epoch = info_.epochs;
  end.step_in_epoch = 0;
  absl::Status status = Save(end, true);
  if (status.ok() && paused_) {
    status = absl::UnavailableError(
        absl::StrCat("the final checkpoint was not written in ", options_.directory,
                     ": a previous chief, stopped but not gone, still holds its lock"));
  }
  dir_.reset();
  return status;
}

absl::Status BackupAndRestore::OnTrainBegin(const TrainInfo& info) {
  info_ = info;
  sigterm_ = std::make_unique<ScopedTerminationHandler>();
  RW_ASSIGN_OR_RETURN(dir_, OpenOnChief(*model_, options_.backup_dir, /*keep=*/1));
  RW_ASSIGN_OR_RETURN(std::optional<LoadedCheckpoint> loaded,
                      RestoreLatestTrainingState(*model_, options_.backup_dir));
  if (!loaded.has_value()) return absl::OkStatus();
  TrainPosition at = loaded->position;
  // The position names the same examples again only if the data is cut the same
  // way (every worker decides alike: the settings came from the chief).
  // A recorded data position (a per-replica run's) names the examples under any
  // global batch, for a run that keeps per-replica batches too.
  const absl::Status same = loaded->settings.SameDataPosition(
      TrainSettings::From(info),
      /*position_recorded=*/model_->strategy()->per_replica_batch() && at.data_pass >= 0);
  if (!same.ok()) {
    if (options_.resume_policy == ResumePolicy::kExact) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot resume exactly from the backup in ", options_.backup_dir, ": ", same.message(),
          "; its position would name other examples. Run with the checkpoint's settings, or "
          "resume at the next epoch boundary with --resume_policy=epoch"));
    }
    // The next epoch boundary of the run as it was, in the run as it is now.
    const int64_t epoch = at.step_in_epoch == 0 ? at.epoch : at.epoch + 1;
    if (info.is_chief) {
      RW_LOG(WARNING) << "BackupAndRestore: " << same.message()
                      << "; resuming at the start of epoch " << epoch + 1
                      << " (--resume_policy=epoch): the rest of epoch " << at.epoch + 1
                      << " is skipped";
    }
    at = TrainPosition{epoch, 0, epoch * info.steps_per_epoch};
  }
  restored_ = true;
  restored_at_ = at;
  model_->ResumeAt(at, loaded->controls);
  if (info.is_chief) {
    RW_LOG(INFO) << "BackupAndRestore: resuming from the backup in " << options_.backup_dir
                 << " at epoch " << at.epoch + 1 << ", step " << at.step_in_epoch;
  }
  return absl::OkStatus();
}

absl::Status BackupAndRestore::OnRegroup(const TrainInfo& info) {
  info_ = info;
  RW_ASSIGN_OR_RETURN(const bool usable,
                      TakeOverDirectory(*model_, options_.backup_dir, /*keep=*/1, &dir_));
  paused_ = !usable;
  return absl::OkStatus();
}

absl::Status BackupAndRestore::Save(const TrainPosition& position) {
  if (paused_) {
    RW_ASSIGN_OR_RETURN(const bool usable,
                        TakeOverDirectory(*model_, options_.backup_dir, /*keep=*/1, &dir_));
    paused_ = !usable;
    if (paused_) return absl::OkStatus();
  }
  return SaveTrainingState(*model_, dir_.get(), position, false, &info_).status();
}

absl::Status BackupAndRestore::OnBatchEnd(int64_t, const Logs&) {
  const TrainPosition& at = model_->fit_position();
  if (options_.save_freq_steps > 0 && at.step % options_.save_freq_steps == 0) return Save(at);
  return absl::OkStatus();
}

absl::Status BackupAndRestore::OnEpochEnd(int64_t epoch, const Logs&) {
  if (options_.save_freq_steps > 0) return absl::OkStatus();
  return Save(model_->fit_position());
}

absl::Status BackupAndRestore::OnPreempted(const TrainPosition& next) {
  RW_RETURN_IF_ERROR(Save(next));
  if (paused_) {
    if (info_.is_chief) {
      RW_LOG(ERROR)
          << "preempted: NO backup saved in " << options_.backup_dir
          << " (a previous chief still holds its lock); a rerun resumes from an older one";
    }
    return absl::OkStatus();
  }
  if (info_.is_chief) {
    RW_LOG(WARNING) << "preempted: backup saved in " << options_.backup_dir << " at step "
                    << next.step;
  }
  return absl::OkStatus();
}

// Only once the whole run is durable: until then the backup, and the SIGTERM
// handling, stay (a SIGTERM or a failed final checkpoint is resumed from it).
absl::Status BackupAndRestore::OnTrainCommitted() {
  absl::Status status;
  if (dir_ != nullptr && options_.delete_checkpoint) {
    status = dir_->RemoveAll();
  } else if (options_.delete_checkpoint && !ListCheckpoints(options_.backup_dir).empty()) {
    // Not the chief when its callbacks began: a chief that left as the run ended
    // (or one on another host, with a directory per host) may have left the
    // backup of this finished run, which a rerun must not resume. The directory
    // is free only if its writer is gone (a live chief holds it and removes it).
    absl::StatusOr<std::unique_ptr<CheckpointDirectory>> left =
        CheckpointDirectory::OpenForWriting(options_.backup_dir, /*keep=*/1);
    if (left.ok()) {
      RW_LOG(INFO) << "BackupAndRestore: removing the backup in " << options_.backup_dir
                   << " that a chief which left as training ended did not";
      status = (*left)->RemoveAll();
    }
  }
  dir_.reset();
  sigterm_.reset();
  return status;
}

}  // namespace ringwork
