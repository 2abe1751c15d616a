// FitLoop's epochs: the begin, the steps, the end (step breakdown, validation,
// callbacks), the chief's decisions and the checkpoints that keep them, and the
// end of training. The start is in fit_loop_start.cc, what follows a change of
// the ring in fit_loop_regroup.cc.
#include "keras/fit_loop.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/exit_code.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "base/termination.h"
#include "observability/timeline.h"
#include "strategy/replica_check.h"

namespace ringwork {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

FitLoop::FitLoop(Model* model, const FitOptions& options) : model_(model), options_(options) {}

FitLoop::~FitLoop() {
  // The stream's threads stop before what they count into (input_report_) goes.
  stream_.reset();
  // Callbacks see the model's fit in progress (SaveControls) until fit returns.
  if (callbacks_given_) model_->fit_callbacks_.clear();
  // After fit the optimizer updates at its rate again (train_on_batch).
  if (rate_scaled_) {
    model_->optimizer_->set_rate_scale(1.0f);
    model_->optimizer_->set_schedule_step(std::nullopt);
  }
}

absl::StatusOr<History> FitLoop::Run(const Dataset& train) {
  // In-memory examples: Keras' default batch, and DATA (one common order).
  if (options_.batch_size == 0) options_.batch_size = 32;
  if (options_.shard_policy == AutoShardPolicy::kAuto)
    options_.shard_policy = AutoShardPolicy::kData;
  RW_RETURN_IF_ERROR(Start(train));
  return Train();
}

absl::StatusOr<History> FitLoop::Train() {
  if (strategy_->joining()) {
    bool ended = false;
    RW_RETURN_IF_ERROR(JoinRunningJob(&ended));
    if (ended) return std::move(history_);
  }
  // A backup written after a stop (kept by a SIGTERM at the end) ends training.
  for (int64_t epoch = start_.epoch; epoch < options_.epochs && !model_->stop_training_; ++epoch) {
    RW_RETURN_IF_ERROR(RunEpoch(epoch));
  }
  RW_RETURN_IF_ERROR(End());
  return std::move(history_);
}

absl::Status FitLoop::RunEpoch(int64_t epoch) {
  const int64_t first = epoch == start_.epoch ? start_.step_in_epoch : 0;
  // A stream's epoch is its pass (the first was started where the run starts).
  if (stream_ != nullptr && epoch != start_.epoch && options_.steps_per_epoch == 0) {
    RW_RETURN_IF_ERROR(stream_->StartPass(epoch, 0, input_report_.StartPass()));
  }
  RW_RETURN_IF_ERROR(BeginEpoch(epoch, first));
  // The epoch's steps may change in a regroup (with a per-replica batch).
  for (int64_t step = first + 1; step <= run_->shape().epoch_steps;) {
    RW_ASSIGN_OR_RETURN(step, RunStep(epoch, step));
  }
  RW_RETURN_IF_ERROR(EndEpoch(epoch));
  return DecideAndCheckpoint(epoch);
}

absl::Status FitLoop::BeginEpoch(int64_t epoch, int64_t first) {
  const std::string where = absl::StrCat("epoch ", epoch + 1, ", begin: ");
  // The operation after the begin: the first step not done, or the end.
  auto after_begin = [&] {
    return first >= run_->shape().epoch_steps ? ops_.End(epoch) : ops_.Step(epoch, first + 1);
  };
  while (true) {
    for (Callback* c : callbacks_) RW_RETURN_IF_ERROR(c->OnEpochBegin(epoch));
    if (resumed_rate_.has_value()) {
      RW_RETURN_IF_ERROR(model_->optimizer_->set_learning_rate(*resumed_rate_));
      resumed_rate_.reset();
    }
    if (std::exchange(skip_begin_, false)) {  // Joined after the members' begin.
      run_->set_progress(after_begin());
      return absl::OkStatus();
    }
    absl::Status agreed = model_->AgreeOnDecisions();
    if (agreed.ok()) {
      std::fill(epoch_sums_.begin(), epoch_sums_.end(), 0.0);
      run_->set_progress(after_begin());
      return absl::OkStatus();
    }
    RW_ASSIGN_OR_RETURN(const int64_t target, Survive(agreed, where));
    if (target == ops_.Begin(epoch)) continue;  // Again, in the new ring.
    if (target != after_begin()) return Unexpected(target, where);
    std::fill(epoch_sums_.begin(), epoch_sums_.end(), 0.0);
    return absl::OkStatus();
  }
}

std::string FitLoop::AtStep(int64_t epoch, int64_t step) {
  return absl::StrCat("epoch ", epoch + 1, ", step ", step, ": ");
}

absl::StatusOr<int64_t> FitLoop::GoOnAt(int64_t epoch, int64_t step,
                                        const absl::StatusOr<int64_t>& target) const {
  if (!target.ok()) return target.status();
  if (*target <= ops_.Begin(epoch) || *target > ops_.End(epoch)) {
    return Unexpected(*target, AtStep(epoch, step));
  }
  return ops_.InEpoch(*target);
}

absl::StatusOr<int64_t> FitLoop::RunStep(int64_t epoch, int64_t step) {
  FitShape& shape = run_->shape();
  const std::string at_step = AtStep(epoch, step);
  const int64_t global_step = shape.epoch_first_step + step - 1;
  strategy_->BeginStep(global_step);
  if (Timeline* timeline = Timeline::Active()) timeline->SetStep(global_step);
  TimelineSpan step_span("step", "step ", int64_t{global_step + 1});
  step_span.Arg("epoch", epoch + 1);
  step_span.Arg("step_in_epoch", step);
  const auto step_start = std::chrono::steady_clock::now();
  TimelineSpan data_span("data", "data wait");
  double weight = 1;
  absl::StatusOr<bool> got = NextBatch(epoch, step, &weight);
  // A stream's step begins with a collective (every worker's rows): a peer may fail there.
  if (!got.ok()) {
    if (!run_->CanSurvive(got.status())) return got.status();
    return GoOnAt(epoch, step, Survive(got.status(), at_step));
  }
  if (!*got) {
    // Every worker's stream ended: the epoch had the steps before this one.
    run_->shape().epoch_steps = step - 1;
    if (options_.steps_per_epoch > 0) {
      // As Keras: the input ran out before steps_per_epoch x epochs; training stops.
      RW_LOG(WARNING) << at_step << "the input ran out of data: training stops after "
                      << global_step << " steps of the " << options_.epochs << " x "
                      << options_.steps_per_epoch
                      << " asked (steps_per_epoch x epochs); Repeat() the dataset";
      model_->stop_training_ = true;
    }
    return kEpochStopped;
  }
  data_span.End();
  const double data_wait_s = SecondsSince(step_start);
  // Dropout draws as a function of the step: the same on every run through it.
  model_->SetTrainingStep(global_step);
  absl::StatusOr<float> loss = model_->TrainStep(batch_, static_cast<float>(weight));
  if (!loss.ok()) return GoOnAt(epoch, step, Survive(loss.status(), at_step));
  // The update is applied: the step is done (after the epoch's last, its end is next).
  run_->set_progress(step == shape.epoch_steps ? ops_.End(epoch) : ops_.Step(epoch, step + 1));
  if (stream_ == nullptr) {
    const DataPosition next = it_->position();
    shape.data_pass = next.pass;
    shape.data_offset = next.offset;
  }
  NotePosition(epoch, step);
  std::vector<double> sums = model_->BatchSums(batch_, *loss);
  // Two more slots: workers waiting to join (elastic training: they come in
  // after this step), and how many workers received SIGTERM (all stop together).
  sums.push_back(static_cast<double>(strategy_->joiners_waiting()));
  const bool terminating = TerminationRequested();
  sums.push_back(terminating ? 1.0 : 0.0);
  const auto reduce_start = std::chrono::steady_clock::now();
  TimelineSpan metrics_span("exposed communication", "metrics all-reduce");
  absl::Status reduced =
      strategy_->Reduce(ReduceOp::kSum, sums.data(), static_cast<int64_t>(sums.size()));
  metrics_span.End();
  if (!reduced.ok()) return GoOnAt(epoch, step, Survive(reduced, at_step));
  // Collectives inside the step (batch statistics) count as exposed communication too.
  breakdown_.AddStep(
      SecondsSince(step_start), data_wait_s,
      SecondsSince(reduce_start) + std::exchange(*model_->in_step_collective_s_, 0.0));
  StepSignals signals;
  signals.terminating = terminating;
  signals.preempted_workers = sums.back();
  sums.pop_back();
  signals.joiners_waiting = sums.back();
  sums.pop_back();
  for (size_t i = 0; i < sums.size(); ++i) epoch_sums_[i] += sums[i];
  logs_ = model_->LogsFrom(epoch_sums_);
  return EndStep(epoch, step, global_step, signals);
}

absl::StatusOr<int64_t> FitLoop::EndStep(int64_t epoch, int64_t step, int64_t global_step,
                                         const StepSignals& signals) {
  const std::string at_step = AtStep(epoch, step);
  if (options_.replica_check_steps > 0 && (global_step + 1) % options_.replica_check_steps == 0) {
    absl::Status identical = CheckReplicasIdentical(strategy_, model_->weights(),
                                                    absl::StrCat("after step ", global_step + 1));
    if (!identical.ok()) return GoOnAt(epoch, step, Survive(identical, at_step));
  }
  for (Callback* c : deciding_) {
    RW_RETURN_IF_ERROR(WithContext(c->OnBatchEnd(step, logs_), at_step));
  }
  if (decide_per_batch_) {
    absl::Status decided = model_->AgreeOnDecisions();
    if (!decided.ok()) return GoOnAt(epoch, step, Survive(decided, at_step));
  }
  absl::Status saved;
  for (Callback* c : checkpointing_) {
    saved = c->OnBatchEnd(step, logs_);
    if (!saved.ok()) break;
  }
  if (!saved.ok()) return GoOnAt(epoch, step, Survive(saved, at_step));
  if (signals.preempted_workers > 0) {
    for (Callback* c : callbacks_) {
      RW_RETURN_IF_ERROR(WithContext(c->OnPreempted(model_->fit_position_), at_step));
    }
    return PreemptedError(absl::StrCat(
        "stopped after epoch ", epoch + 1, ", step ", step, ": ",
        static_cast<int64_t>(signals.preempted_workers), " worker(s) received SIGTERM",
        signals.terminating ? " (this one did)" : "", "; rerun the job to resume from its backup"));
  }
  // As Keras: the epoch still ends (validation, callbacks).
  if (model_->stop_training_) return kEpochStopped;
  if (signals.joiners_waiting > 0) return GoOnAt(epoch, step, LetJoinersIn(at_step));
  return step + 1;
}

absl::Status FitLoop::EndEpoch(int64_t epoch) {
  FitShape& shape = run_->shape();
  const int64_t end_op = ops_.End(epoch);
  run_->set_progress(end_op);  // Also after a stop: every worker stopped at the same step.
  // A stop's checkpoint ends the epoch too (no step of it runs again).
  if (epoch_passes_ > 0) {
    shape.data_pass = (epoch + 1) * epoch_passes_;
    shape.data_offset = 0;
  }
  NotePosition(epoch, shape.epoch_steps);
  const std::string where = absl::StrCat("epoch ", epoch + 1, ", end: ");
  // A worker that joined in a regroup at the end's second part skips the first.
  if (std::exchange(skip_end_first_part_, false)) run_->set_progress(ops_.Decisions(epoch));
  while (run_->progress() == end_op) {
    logs_ = model_->LogsFrom(epoch_sums_);
    absl::Status agreed = breakdown_.EndEpoch(
        strategy_,
        model_->reducer_ != nullptr ? model_->reducer_->TakeTiming() : GradientReducer::Timing(),
        &logs_);
    if (!agreed.ok()) agreed = WithContext(agreed, "agreeing on the step breakdown: ");
    if (agreed.ok() && stream_ != nullptr) {
      agreed = input_report_.EndEpoch(strategy_, &logs_);
      if (!agreed.ok()) agreed = WithContext(agreed, "agreeing on the input's figures: ");
    }
    if (agreed.ok() &&
        (options_.validation_data != nullptr || options_.validation_pipeline != nullptr)) {
      agreed = Validate(&logs_);
    }
    if (agreed.ok()) {
      history_.AddEpochExamples(static_cast<int64_t>(epoch_sums_[1]));
      if (log_learning_rate_) logs_["learning_rate"] = model_->optimizer_->learning_rate();
      for (Callback* c : deciding_) RW_RETURN_IF_ERROR(c->OnEpochEnd(epoch, logs_));
      run_->set_progress(ops_.Decisions(epoch));
      break;
    }
    RW_ASSIGN_OR_RETURN(const int64_t target, Survive(agreed, where));
    if (target == end_op) continue;              // Again, in the new ring.
    if (target == ops_.Decisions(epoch)) break;  // Another worker got through it.
    return Unexpected(target, where);
  }
  return absl::OkStatus();
}

absl::Status FitLoop::Validate(Logs* logs) {
  RW_ASSIGN_OR_RETURN(
      const EvaluateResult val,
      options_.validation_pipeline != nullptr
          ? model_->Evaluate(*options_.validation_pipeline, options_.binding, options_.batch_size)
          : model_->Evaluate(*options_.validation_data, options_.batch_size));
  (*logs)["val_loss"] = val.loss;
  for (const auto& [name, value] : val.metrics) (*logs)["val_" + name] = value;
  return absl::OkStatus();
}

absl::Status FitLoop::DecideAndCheckpoint(int64_t epoch) {
  FitShape& shape = run_->shape();
  const int64_t decisions_op = ops_.Decisions(epoch), next_epoch_op = ops_.Begin(epoch + 1);
  const std::string where = absl::StrCat("epoch ", epoch + 1, ", end: ");
  while (true) {
    absl::Status agreed = WithContext(model_->AgreeOnDecisions(), where);
    for (Callback* c : checkpointing_) {
      if (!agreed.ok()) break;
      agreed = c->OnEpochEnd(epoch, logs_);
    }
    if (agreed.ok()) {
      run_->set_progress(next_epoch_op);
      // The next epoch: its first step and how many it has (a worker that did
      // not get through this took them from one that did).
      shape.epoch_first_step += shape.epoch_steps;
      shape.epoch_steps = StepsOfEpoch(epoch + 1, 0, {shape.data_pass, shape.data_offset});
      return absl::OkStatus();
    }
    RW_ASSIGN_OR_RETURN(const int64_t target, Survive(agreed, where));
    if (target == decisions_op) continue;                  // Again, in the new ring.
    if (target == next_epoch_op) return absl::OkStatus();  // Another worker got through it.
    return Unexpected(target, where);
  }
}

absl::Status FitLoop::End() {
  // The last operation of the fit.
  const int64_t end_train_op = run_->progress();
  while (true) {
    absl::Status ended;
    for (Callback* c : callbacks_) ended.Update(c->OnTrainEnd(logs_));
    absl::Status agreed = model_->AgreeTrainingEnded(ended);
    if (agreed.ok()) break;
    // A worker that got through it has left fit: the others end it again.
    RW_ASSIGN_OR_RETURN(const int64_t target, Survive(agreed, "ending training: "));
    if (target == ElasticRun::kEnded) break;  // It ended on another worker (it evaluates).
    if (target != end_train_op) return Unexpected(target, "the end of training");
  }
  for (Callback* c : callbacks_) RW_RETURN_IF_ERROR(c->OnTrainCommitted());
  model_->ended_fit_ = run_->shape();
  return absl::OkStatus();
}

}  // namespace ringwork
