// FitLoop's start: the data and the steps it gives, the callbacks sorted, the
// agreement of every worker on how fit runs, the callbacks' begin, a resumed
// position, the data put there; and a worker that starts while its job runs
// joining it.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/fnv1a.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "keras/fit_loop.h"

namespace ringwork {

absl::Status AgreeOnFit(MultiWorkerMirroredStrategy* strategy, FitAgreement* mine) {
  // One MIN all-reduce: each compared value and its negation (equal everywhere
  // exactly when min == -min(-x)), and "some worker decides per batch" as -1.
  const int64_t batch_rule = mine->per_replica_batch ? 1 : 0;
  int64_t words[9] = {mine->steps_per_epoch,
                      -mine->steps_per_epoch,
                      mine->epochs,
                      -mine->epochs,
                      mine->replica_check_steps,
                      -mine->replica_check_steps,
                      mine->decide_per_batch ? -1 : 0,
                      batch_rule,
                      -batch_rule};
  std::vector<int64_t> all(words, words + 9);
  for (const auto& [flag, value] : mine->elastic_settings) {
    all.push_back(value);
    all.push_back(-value);
  }
  RW_RETURN_IF_ERROR(strategy->communicator()->AllReduce(all.data(), all.size(), DataType::kInt64,
                                                         ReduceOp::kMin));
  std::copy(all.begin(), all.begin() + 9, words);
  mine->decide_per_batch = words[6] < 0;
  // Elastic settings (the first: --min_workers; the others matter only with it).
  for (size_t i = 0; i < mine->elastic_settings.size(); ++i) {
    const int64_t least = all[9 + 2 * i], most = -all[10 + 2 * i];
    if (least == most || (i > 0 && mine->elastic_settings[0].second == 0)) continue;
    return absl::FailedPreconditionError(absl::StrCat(
        "the workers' elastic training settings differ: ", mine->elastic_settings[i].first,
        " ranges from ", least, " to ", most, " across the workers (this worker, rank ",
        strategy->rank(), ": ", mine->elastic_settings[i].second,
        "); every worker must decide the quorum and detect failures alike: give every worker "
        "the same flags"));
  }
  if (words[0] != -words[1] || words[2] != -words[3] || words[4] != -words[5] ||
      words[7] != -words[8]) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the workers fit differently: steps per epoch, epochs, replica_check_steps or the "
        "elastic batch rule differ (this worker, rank ",
        strategy->rank(), ": ", mine->steps_per_epoch, ", ", mine->epochs, ", ",
        mine->replica_check_steps, ", ", mine->per_replica_batch ? "per_replica" : "global",
        "): every worker must call fit the same way"));
  }
  return absl::OkStatus();
}

absl::Status FitLoop::Start(const Dataset& train) {
  if (train.examples().count() == 0) {
    return absl::InvalidArgumentError("fit on an empty dataset");
  }
  RW_RETURN_IF_ERROR(model_->EnsureReady(train.examples().example_shape()));
  strategy_ = model_->strategy_;
  RW_ASSIGN_OR_RETURN(
      data_, strategy_->DistributeDataset(train, options_.batch_size, options_.shard_policy,
                                          model_->compile_options_.seed));
  RW_RETURN_IF_ERROR(CountSteps());
  SortCallbacks();
  // Every worker must run the same steps: a difference would misalign collectives.
  FitAgreement agreement{steps_,       options_.epochs, options_.replica_check_steps,
                         per_replica_, decides_here_,   strategy_->ElasticSettings()};
  RW_RETURN_IF_ERROR(AgreeOnFit(strategy_, &agreement));
  RW_RETURN_IF_ERROR(BeginTraining(agreement.decide_per_batch));
  return PositionData();
}

absl::Status FitLoop::CountSteps() {
  if (options_.steps_per_epoch <= 0 && data_.passes < 0) {
    return absl::InvalidArgumentError(
        "fit on a dataset repeated forever needs steps_per_epoch (how many steps make an "
        "epoch)");
  }
  const int64_t pass_steps = data_.passes * data_.steps_per_pass;
  steps_ = options_.steps_per_epoch > 0 ? options_.steps_per_epoch : pass_steps;
  // Keras also walks the data anew each epoch when steps_per_epoch is exactly the
  // data's length.
  const bool epochs_walk_data =
      options_.steps_per_epoch <= 0 || (data_.passes >= 0 && steps_ == pass_steps);
  if (epochs_walk_data) {
    data_.passes = -1;  // Every epoch walks the dataset again: passes go on.
  } else if (data_.passes >= 0 && options_.epochs * steps_ > pass_steps) {
    return absl::InvalidArgumentError(
        absl::StrCat("steps_per_epoch ", steps_, " x ", options_.epochs, " epochs needs ",
                     options_.epochs * steps_, " steps, but the data gives ", pass_steps, " (",
                     data_.passes, " pass", data_.passes == 1 ? "" : "es", " of ",
                     data_.steps_per_pass, " steps of a global batch of ", options_.batch_size,
                     "); Repeat() the dataset, or train fewer steps"));
  }
  if (strategy_->elastic() && options_.shard_policy != AutoShardPolicy::kData) {
    return absl::InvalidArgumentError(absl::StrCat(
        "elastic training (min_workers ", strategy_->options().min_workers,
        ") re-shards the data by its position in one common order: it needs the DATA shard "
        "policy, not ",
        AutoShardPolicyName(options_.shard_policy)));
  }
  per_replica_ = strategy_->per_replica_batch();
  configured_workers_ = strategy_->cluster().configured_world_size();
  replica_batch_ = options_.batch_size / configured_workers_;
  if (per_replica_ && options_.batch_size % configured_workers_ != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "elastic training with a per-replica batch: the global batch ", options_.batch_size,
        " must be a multiple of the cluster's ", configured_workers_, " workers"));
  }
  epoch_passes_ = epochs_walk_data ? steps_ / std::max<int64_t>(data_.steps_per_pass, 1) : 0;
  return absl::OkStatus();
}

void FitLoop::SortCallbacks() {
  model_->ended_fit_.reset();
  callbacks_ = {&history_};
  if (options_.verbose > 0 && strategy_->is_chief()) callbacks_.push_back(&progress_bar_);
  callbacks_.insert(callbacks_.end(), options_.callbacks.begin(), options_.callbacks.end());
  // Callbacks see the model's fit in progress (SaveControls) until fit returns.
  model_->fit_callbacks_ = callbacks_;
  callbacks_given_ = true;
  model_->stop_training_ = false;
  for (Callback* c : callbacks_) {
    (c->saves_checkpoints() ? checkpointing_ : deciding_).push_back(c);
  }
  decides_here_ = std::any_of(callbacks_.begin(), callbacks_.end(),
                              [](Callback* c) { return c->decides_per_batch(); });
  log_learning_rate_ = model_->compile_options_.optimizer.learning_rate_schedule != nullptr ||
                       std::any_of(callbacks_.begin(), callbacks_.end(),
                                   [](Callback* c) { return c->changes_learning_rate(); });
}

absl::Status FitLoop::BeginTraining(bool decide_per_batch) {
  decide_per_batch_ = decide_per_batch;
  info_ = TrainInfo{options_.epochs,
                    steps_,
                    options_.batch_size,
                    strategy_->num_replicas_in_sync(),
                    strategy_->is_chief(),
                    options_.shard_policy,
                    data_.seed,
                    data_.ExamplesPerPass()};
  for (Callback* c : callbacks_) {
    c->set_model(model_);
    RW_RETURN_IF_ERROR(c->OnTrainBegin(info_));
  }
  start_ = TrainPosition{options_.initial_epoch, 0, options_.initial_epoch * steps_};
  if (!model_->resume_.has_value()) return absl::OkStatus();
  start_ = *model_->resume_;
  model_->resume_.reset();
  const TrainingControls controls = std::move(model_->resume_controls_);
  model_->resume_controls_.clear();
  RW_RETURN_IF_ERROR(model_->RestoreControls(controls));
  const auto rate = controls.find(Model::kLearningRateControl);
  if (start_.step_in_epoch > 0 && rate != controls.end() && rate->second.size() == 1) {
    // The epoch's begin already set this rate (LearningRateScheduler): it runs
    // again and must not set it twice.
    resumed_rate_ = static_cast<float>(rate->second[0]);
  }
  RW_LOG(INFO) << "resuming at epoch " << start_.epoch + 1 << ", step " << start_.step_in_epoch
               << " (" << start_.step << " steps done)";
  return absl::OkStatus();
}

absl::Status FitLoop::PositionData() {
  // The most steps an epoch can have: `steps_`, or with a per-replica batch (the
  // count follows the ring) those of one replica alone.
  ops_.max_epoch_steps =
      per_replica_ && epoch_passes_ > 0
          ? epoch_passes_ * ((data_.ExamplesPerPass() + replica_batch_ - 1) / replica_batch_)
          : steps_;
  epoch_sums_.assign(static_cast<size_t>(model_->SumsSize()), 0.0);
  FitShape shape{steps_,
                 options_.epochs,
                 data_.steps_per_pass,
                 data_.ExamplesPerPass(),
                 static_cast<int64_t>(data_.seed),
                 static_cast<int64_t>(Fnv1a64(absl::StrJoin(model_->AgreementLines(), "\n")) >> 1),
                 options_.replica_check_steps,
                 per_replica_,
                 options_.batch_size,
                 decide_per_batch_,
                 start_.epoch,
                 start_.step_in_epoch};
  shape.elastic_settings = strategy_->ElasticSettingsHash();
  // Steps are numbered as they ran with a per-replica batch, else as every epoch
  // has `steps_` (a checkpoint of a per-replica run may count otherwise).
  shape.epoch_first_step =
      per_replica_ ? start_.step - start_.step_in_epoch : start_.epoch * steps_;
  ElasticReplica* replica = model_;
  run_.emplace(strategy_, replica, shape, ops_.Begin(start_.epoch));
  // One iterator for the whole run: step g of the run is step g % steps_per_pass
  // of pass g / steps_per_pass (a resumed run skips to where it stopped), until a
  // regroup: then blocks from the exact example reached. A checkpoint of a
  // per-replica run records where its data stood (the global batch may have
  // changed): it resumes there; so does a per-replica fit that starts on a ring
  // smaller than the cluster (its global batch is smaller).
  const int64_t first_data_step = start_.epoch * steps_ + start_.step_in_epoch;
  const int now = strategy_->num_replicas_in_sync();
  RW_ASSIGN_OR_RETURN(
      const DataPosition start_at,
      StartDataOfFit(first_data_step, per_replica_ ? replica_batch_ * now : options_.batch_size));
  run_->shape().data_pass = start_at.pass;
  run_->shape().data_offset = start_at.offset;
  it_ = data_.block_replicas > 0 ? data_.IterateFrom(start_at) : data_.Iterate(first_data_step);
  model_->optimizer_->set_rate_scale(per_replica_ ? static_cast<float>(now) / configured_workers_
                                                  : 1.0f);
  rate_scaled_ = true;
  if (model_->reducer_ != nullptr) model_->reducer_->TakeTiming();  // Counts from this fit on.
  *model_->in_step_collective_s_ = 0;
  run_->shape().epoch_steps = StepsOfEpoch(start_.epoch, start_.step_in_epoch, start_at);
  // A checkpoint's steps of the epoch were counted at the batch it had: whatever
  // the ring becomes (one replica at the worst), the epoch must still fit the
  // operations' numbering.
  int64_t most_steps = start_.step_in_epoch;
  if (per_replica_ && epoch_passes_ > 0 && start_.epoch < options_.epochs) {
    const int64_t pass_examples = data_.common.examples_per_pass();
    const int64_t one_replica_pass = (pass_examples + replica_batch_ - 1) / replica_batch_;
    most_steps += (pass_examples - start_at.offset + replica_batch_ - 1) / replica_batch_ +
                  ((start_.epoch + 1) * epoch_passes_ - start_at.pass - 1) * one_replica_pass;
  }
  if (start_.step_in_epoch < 0 || most_steps > ops_.max_epoch_steps) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot resume at step ", start_.step_in_epoch, " of epoch ", start_.epoch + 1, ": with ",
        replica_batch_, " examples per replica the epoch could take ", most_steps,
        " steps, more than one replica alone needs for a whole epoch (", ops_.max_epoch_steps,
        "); resume with the per-replica batch the checkpoint was written with"));
  }
  NotePosition(start_.epoch, start_.step_in_epoch);
  return absl::OkStatus();
}

absl::StatusOr<DataPosition> FitLoop::StartDataOfFit(int64_t first_data_step,
                                                     int64_t global_batch) {
  DataPosition start_at = data_.PositionAfter(first_data_step);
  const int now = strategy_->num_replicas_in_sync();
  const bool recorded =
      start_.data_pass >= 0 && !(DataPosition{start_.data_pass, start_.data_offset} == start_at);
  if (!recorded && !(per_replica_ && now != configured_workers_)) return start_at;
  if (recorded) {
    const DataPosition at{start_.data_pass, start_.data_offset};
    const int64_t pass_examples = data_.common.examples_per_pass();
    const bool in_epoch =
        epoch_passes_ == 0 || (at.pass >= 0 && at.pass / epoch_passes_ == start_.epoch);
    if (!per_replica_) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the checkpoint was written by elastic training with a per-replica batch after its "
          "ring changed size (its data stood at pass ",
          at.pass, ", example ", at.offset,
          "): resume it with --elastic_batch=per_replica (and --min_workers)"));
    }
    if (pass_examples == 0 || at.offset < 0 || at.offset >= pass_examples || !in_epoch) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot resume at the checkpoint's data position (pass ", at.pass,
                       ", example ", at.offset, ") in epoch ", start_.epoch + 1,
                       ": it needs the DATA shard policy and a position inside that epoch's ",
                       pass_examples, " examples per pass"));
    }
    start_at = at;
  }
  RW_ASSIGN_OR_RETURN(data_, data_.Regrouped(now, strategy_->rank(), start_at, global_batch));
  return start_at;
}

absl::Status FitLoop::JoinRunningJob(bool* ended) {
  int64_t slowest = 0;
  absl::Status joined = run_->JoinRunningJob(&slowest, &epoch_sums_);
  if (strategy_->joining()) {  // It never got in.
    return joined.ok() ? absl::InternalError("joining the running job ended before it joined")
                       : joined;
  }
  absl::StatusOr<int64_t> target =
      joined.ok() ? GoOnInNewRing("", -1, -1, slowest, false) : absl::StatusOr<int64_t>(joined);
  // A member failed before this worker went on: it survives with them (with no
  // progress of its own, it takes a member's state again).
  if (!target.ok()) {
    RW_RETURN_IF_ERROR(Survive(target.status(), "joining the running job: ", false).status());
  }
  if (run_->progress() >= ElasticRun::kEnded) {
    // It came into a regroup of the evaluation after training: it evaluates with
    // the members (EvaluateAfterFit), having trained nothing itself.
    model_->ended_fit_ = run_->shape();
    *ended = true;
    return absl::OkStatus();
  }
  // It goes on at the members' operation: a step (the epoch's begin was theirs),
  // or whatever operation a regroup it came into resumed at.
  const int64_t epoch = ops_.EpochOf(run_->progress()), op = ops_.InEpoch(run_->progress());
  const int64_t in_epoch = StepsDoneBefore(epoch, op);
  start_ = TrainPosition{epoch, in_epoch, run_->shape().epoch_first_step + in_epoch};
  skip_begin_ = op >= 1;
  skip_end_first_part_ = run_->progress() == ops_.Decisions(epoch);
  if (skip_begin_ && model_->compile_options_.optimizer.learning_rate_schedule == nullptr) {
    resumed_rate_ = model_->optimizer_->learning_rate();  // What the members' begin left.
  }
  return absl::OkStatus();
}

}  // namespace ringwork
