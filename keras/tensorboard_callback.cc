#include "keras/tensorboard_callback.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "keras/model.h"

namespace ringwork {

absl::Status TensorBoardOptions::Validate() const {
  if (update_freq < 0 || histogram_freq < 0) {
    return absl::InvalidArgumentError(absl::StrCat("TensorBoard: update_freq ", update_freq,
                                                   " and histogram_freq ", histogram_freq,
                                                   " must be 0 (off) or more"));
  }
  return absl::OkStatus();
}

absl::Status TensorBoard::OnTrainBegin(const TrainInfo& info) {
  RW_RETURN_IF_ERROR(options_.Validate());  // On every worker: they fail alike.
  info_ = info;
  validation_.reset();
  train_.reset();
  active_ = info.is_chief && !options_.log_dir.empty();
  if (!active_) return absl::OkStatus();
  RW_ASSIGN_OR_RETURN(train_, EventFileWriter::Create(options_.log_dir + "/train"));
  return absl::OkStatus();
}

absl::Status TensorBoard::OnRegroup(const TrainInfo& info) {
  const bool was_chief = info_.is_chief;
  info_ = info;
  if (was_chief || !info.is_chief || options_.log_dir.empty()) return absl::OkStatus();
  // The chief left: this worker writes on, into a new event file of the same run
  // (a file it cannot create only ends the event files, as a failed write does).
  absl::StatusOr<std::unique_ptr<EventFileWriter>> created =
      EventFileWriter::Create(options_.log_dir + "/train");
  active_ = Written(created.status());
  if (active_) train_ = std::move(*created);
  return absl::OkStatus();
}

bool TensorBoard::Written(const absl::Status& status) {
  if (status.ok()) return true;
  // Curves are not worth the training run: warn once, write no more.
  RW_LOG(WARNING) << "TensorBoard: " << status.message() << "; no more summaries are written";
  active_ = false;
  return false;
}

absl::Status TensorBoard::OnEpochBegin(int64_t epoch) {
  epoch_ = epoch;
  first_step_ = -1;
  epoch_start_ = std::chrono::steady_clock::now();
  return absl::OkStatus();
}

absl::Status TensorBoard::OnBatchEnd(int64_t step, const Logs& logs) {
  if (first_step_ < 0) first_step_ = step - 1;
  last_step_ = step;
  if (!active_ || options_.update_freq == 0) return absl::OkStatus();
  // With a per-replica batch an epoch's steps follow the ring: the steps done.
  const int64_t done = model_ != nullptr && model_->fit_position().data_pass >= 0
                           ? model_->fit_position().step
                           : epoch_ * info_.steps_per_epoch + step;
  if (done % options_.update_freq != 0) return absl::OkStatus();
  for (const auto& [name, value] : logs) {
    if (!Written(train_->WriteScalar("batch_" + name, done, static_cast<float>(value)))) break;
  }
  return absl::OkStatus();
}

absl::Status TensorBoard::OnEpochEnd(int64_t epoch, const Logs& logs) {
  if (!active_) return absl::OkStatus();
  for (const auto& [name, value] : logs) {
    if (absl::StartsWith(name, "val_")) {
      if (validation_ == nullptr) {
        absl::StatusOr<std::unique_ptr<EventFileWriter>> created =
            EventFileWriter::Create(options_.log_dir + "/validation");
        if (!Written(created.status())) return absl::OkStatus();
        validation_ = std::move(*created);
      }
      if (!Written(validation_->WriteScalar("epoch_" + name.substr(4), epoch,
                                            static_cast<float>(value)))) {
        return absl::OkStatus();
      }
    } else if (!Written(train_->WriteScalar(IsTimingLog(name) ? name : "epoch_" + name, epoch,
                                            static_cast<float>(value)))) {
      return absl::OkStatus();
    }
  }
  if (!Written(train_->WriteScalar("epoch_learning_rate", epoch,
                                   model_->optimizer()->learning_rate()))) {
    return absl::OkStatus();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start_).count();
  const int64_t steps = first_step_ < 0 ? 0 : last_step_ - first_step_;
  if (seconds > 0 && steps > 0 &&
      !Written(train_->WriteScalar(
          "epoch_samples_per_second", epoch,
          static_cast<float>(static_cast<double>(steps * info_.global_batch_size) / seconds)))) {
    return absl::OkStatus();
  }
  if (options_.histogram_freq > 0 && epoch % options_.histogram_freq == 0) {
    for (const Variable* v : model_->weights()) {
      const Histogram h = Histogram::Of(v->value.data(), static_cast<size_t>(v->size()));
      if (h.num > 0 && !Written(train_->WriteHistogram(v->name, epoch, h))) break;
    }
  }
  return absl::OkStatus();
}

}  // namespace ringwork
