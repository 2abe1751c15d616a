// FitLoop when the ring changes under it: surviving a peer's failure, letting
// workers join, and going on at the operation the members agreed on (the data
// re-sharded there, the callbacks told); and where training stands, for the
// callbacks (fit_position).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "keras/fit_loop.h"

namespace ringwork {

absl::Status FitLoop::Unexpected(int64_t target, const std::string& where) {
  return absl::InternalError(
      absl::StrCat("after a regroup: operation ", target, " cannot follow ", where));
}

absl::StatusOr<int64_t> FitLoop::Survive(const absl::Status& failure, const std::string& where,
                                         bool in_step) {
  absl::Status current = failure;
  // The ring's size from its configuration: after a failed grow there is no
  // transport left to ask.
  const int before = strategy_->cluster().world_size();
  const int64_t mine = run_->progress();
  for (int round = 1;; ++round) {
    // Only a failed ring is survived (a callback's own error is not).
    if (!run_->CanSurvive(current) || round > 3) return WithContext(current, where);
    int64_t slowest = 0;
    RW_RETURN_IF_ERROR(
        WithContext(run_->SurvivePeerFailure(current, &slowest, &epoch_sums_), where));
    absl::StatusOr<int64_t> target =
        GoOnInNewRing(std::string(failure.message()), before, mine, slowest, in_step);
    if (target.ok()) return target;
    // A peer failing in the new ring before it went on is survived the same way.
    current = target.status();
  }
}

absl::StatusOr<int64_t> FitLoop::LetJoinersIn(const std::string& where) {
  const int before = strategy_->num_replicas_in_sync();
  const int64_t mine = run_->progress();
  int64_t slowest = 0;
  absl::Status grown = run_->LetJoinersIn(&slowest, &epoch_sums_);
  if (!grown.ok()) return Survive(grown, where, /*in_step=*/false);
  absl::StatusOr<int64_t> target = GoOnInNewRing("", before, mine, slowest, false);
  if (!target.ok()) return Survive(target.status(), where, /*in_step=*/false);
  return target;
}

absl::StatusOr<int64_t> FitLoop::GoOnInNewRing(const std::string& cause, int before, int64_t mine,
                                               int64_t slowest, bool in_step) {
  FitShape& shape = run_->shape();
  const int64_t progress = run_->progress();
  decide_per_batch_ = shape.decide_per_batch;
  if (progress >= ElasticRun::kEnded) {
    // A worker had ended fit (it evaluates): so does this one, with no
    // collective more (callbacks are not told: the final checkpoint is written).
    RW_LOG(WARNING) << "generation " << strategy_->generation() << ": " << strategy_->departed()
                    << " left: " << cause << "; " << strategy_->num_replicas_in_sync() << " of "
                    << before << " workers go on; training had ended on another worker";
    return progress;
  }
  const int64_t epoch = ops_.EpochOf(progress), op = ops_.InEpoch(progress);
  const bool step_op = ops_.IsStep(progress);
  // The step every worker was in when a peer failed runs again.
  if (in_step && step_op && slowest == progress) ++model_->steps_rerun_;
  const int64_t done_in_epoch = StepsDoneBefore(epoch, op);
  const int64_t steps_done = shape.epoch_first_step + done_in_epoch;
  // The begin runs again: LearningRateScheduler must not apply its schedule twice
  // to the rate the survivors took (it is set back after the epoch's begin).
  if (op == 0 && model_->compile_options_.optimizer.learning_rate_schedule == nullptr) {
    resumed_rate_ = model_->optimizer_->learning_rate();
  }
  // The data from the root's position: the same global batch split over the
  // ring, or with a per-replica batch a global batch (and a learning rate) that
  // follows the ring's size, and the epoch's steps with it.
  const int now = strategy_->num_replicas_in_sync();
  const int64_t global_batch = per_replica_ ? replica_batch_ * now : options_.batch_size;
  if (stream_ != nullptr) {
    // A stream: its common order split over the new ring from the step reached
    // (with steps_per_epoch, the run's one pass after every step done).
    RW_RETURN_IF_ERROR(stream_->Regroup(now, strategy_->rank()));
    const bool one_pass = options_.steps_per_epoch > 0;
    // Past an epoch's steps (its end) the next epoch's begin starts its pass.
    if (one_pass || op == 0 || step_op) {
      RW_RETURN_IF_ERROR(stream_->StartPass(one_pass ? 0 : epoch,
                                            one_pass ? steps_done : done_in_epoch,
                                            input_report_.ContinuePass()));
    }
  } else {
    const DataPosition from{shape.data_pass, shape.data_offset};
    RW_ASSIGN_OR_RETURN(DistributedDataset regrouped,
                        data_.Regrouped(now, strategy_->rank(), from, global_batch));
    it_.reset();  // Its prefetch thread reads `data_`.
    data_ = std::move(regrouped);
    it_ = data_.IterateFrom(from);
    if (op <= ops_.max_epoch_steps) shape.epoch_steps = StepsOfEpoch(epoch, done_in_epoch, from);
  }
  model_->optimizer_->set_rate_scale(per_replica_ ? static_cast<float>(now) / configured_workers_
                                                  : 1.0f);
  NotePosition(epoch, done_in_epoch);
  const std::string at = op == 0 ? "its begin" : step_op ? absl::StrCat("step ", op) : "its end";
  std::string change;
  if (!strategy_->departed().empty()) {
    change = absl::StrCat(strategy_->departed(), " left: ", cause, "; ");
  }
  if (!strategy_->arrived().empty()) absl::StrAppend(&change, strategy_->arrived(), " joined; ");
  RW_LOG(WARNING)
      << "generation " << strategy_->generation() << ": " << change
      << (before > now ? absl::StrCat(now, " of ", before, " workers go on (")
                       : absl::StrCat(now, " workers go on (",
                                      before > 0 ? absl::StrCat(before, " before, ") : ""))
      << configured_workers_ << " in the cluster), at epoch " << epoch + 1 << ", " << at << " ("
      << steps_done << " steps done"
      << (before > 0 && mine < progress ? "; this worker takes the state of one further on" : "")
      << ")"
      << (per_replica_
              ? absl::StrCat("; global batch ", global_batch, ", learning rate x ", now, "/",
                             configured_workers_, ", ", shape.epoch_steps, " steps in this epoch")
              : "");
  info_.replicas = strategy_->num_replicas_in_sync();
  info_.is_chief = strategy_->is_chief();
  for (Callback* c : callbacks_) RW_RETURN_IF_ERROR(c->OnRegroup(info_));
  if (options_.verbose > 0 && info_.is_chief &&
      std::find(callbacks_.begin(), callbacks_.end(), &progress_bar_) == callbacks_.end()) {
    // The chief left: this one shows the progress now.
    callbacks_.push_back(&progress_bar_);
    deciding_.push_back(&progress_bar_);
    progress_bar_.set_model(model_);
    RW_RETURN_IF_ERROR(progress_bar_.OnTrainBegin(info_));
    RW_RETURN_IF_ERROR(progress_bar_.OnEpochBegin(epoch));
  }
  return progress;
}

int64_t FitLoop::StepsOfEpoch(int64_t epoch, int64_t done, const DataPosition& from) const {
  if (!per_replica_ || epoch_passes_ == 0) return steps_;
  const int64_t end_pass = (epoch + 1) * epoch_passes_;
  if (from.pass >= end_pass) return done;
  return done + data_.StepsLeftInPass(from) + (end_pass - from.pass - 1) * data_.steps_per_pass;
}

int64_t FitLoop::StepsDoneBefore(int64_t epoch, int64_t op) const {
  const FitShape& shape = run_->shape();
  if (op > 0) return std::min<int64_t>(op - 1, shape.epoch_steps);
  return epoch == shape.start_epoch ? shape.start_step_in_epoch : 0;
}

void FitLoop::NotePosition(int64_t epoch, int64_t done) {
  const FitShape& shape = run_->shape();
  TrainPosition& position = model_->fit_position_;
  position = done >= shape.epoch_steps ? TrainPosition{epoch + 1, 0, shape.epoch_first_step + done}
                                       : TrainPosition{epoch, done, shape.epoch_first_step + done};
  if (per_replica_) {
    position.data_pass = shape.data_pass;
    position.data_offset = shape.data_offset;
  }
  if (stream_ != nullptr) {
    // The steps a stream's epochs had are known only as they run: the position
    // is the record of them (checkpoints and TensorBoard count by its step).
    position.data_pass = position.epoch;
    position.data_offset = position.step_in_epoch;
  }
  // A stream's epoch has an unknown number of steps until it ended (0: unknown).
  model_->fit_epoch_steps_ = shape.epoch_steps >= kUnknownSteps ? 0 : shape.epoch_steps;
  model_->fit_global_batch_ =
      stream_ != nullptr ? stream_->global_batch() : data_.global_batch_size;
  // A schedule follows the data: the full ring's steps up to this position.
  if (per_replica_) {
    model_->optimizer_->set_schedule_step(shape.data_pass * shape.steps_per_pass +
                                          shape.data_offset / options_.batch_size);
  }
}

}  // namespace ringwork
