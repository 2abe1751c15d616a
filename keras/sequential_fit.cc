// Sequential::Fit, the training loop: steps, callbacks, when the chief's
// decisions are agreed (sequential_controls.cc) and what elastic training's
// regroups resume (sequential_elastic.cc). The rest of the model is in
// sequential.cc.
#include "keras/sequential.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/exit_code.h"
#include "base/fnv1a.h"
#include "base/logging.h"
#include "base/termination.h"
#include "base/status_macros.h"
#include "keras/step_breakdown.h"
#include "observability/timeline.h"
#include "strategy/replica_check.h"

namespace ringwork {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

absl::StatusOr<History> Sequential::Fit(const Dataset& train, const FitOptions& options) {
  if (train.examples().count() == 0) return absl::InvalidArgumentError("fit on an empty dataset");
  RW_RETURN_IF_ERROR(EnsureReady(train.examples().example_shape()));
  RW_ASSIGN_OR_RETURN(DistributedDataset data,
                      strategy_->DistributeDataset(train, options.batch_size, options.shard_policy,
                                                   compile_options_.seed));
  // Keras: an epoch is one walk through the dataset (its passes, each in a new
  // order every epoch), or `steps_per_epoch` steps of one stream that goes on
  // across epochs (pass after pass for a repeated dataset).
  if (options.steps_per_epoch <= 0 && data.passes < 0) {
    return absl::InvalidArgumentError(
        "fit on a dataset repeated forever needs steps_per_epoch (how many steps make an epoch)");
  }
  const int64_t steps = options.steps_per_epoch > 0 ? options.steps_per_epoch
                                                    : data.passes * data.steps_per_pass;
  // Keras also walks the data anew each epoch when steps_per_epoch is exactly the
  // data's length.
  const bool epochs_walk_data =
      options.steps_per_epoch <= 0 || (data.passes >= 0 && steps == data.passes * data.steps_per_pass);
  if (epochs_walk_data) {
    data.passes = -1;  // Every epoch walks the dataset again: passes go on.
  } else if (data.passes >= 0 && options.epochs * steps > data.passes * data.steps_per_pass) {
    return absl::InvalidArgumentError(absl::StrCat(
        "steps_per_epoch ", steps, " x ", options.epochs, " epochs needs ", options.epochs * steps,
        " steps, but the data gives ", data.passes * data.steps_per_pass, " (", data.passes,
        " pass", data.passes == 1 ? "" : "es", " of ", data.steps_per_pass,
        " steps of a global batch of ", options.batch_size,
        "); Repeat() the dataset, or train fewer steps"));
  }
  if (strategy_->elastic() && options.shard_policy != AutoShardPolicy::kData) {
    return absl::InvalidArgumentError(absl::StrCat(
        "elastic training (min_workers ", strategy_->options().min_workers,
        ") re-shards the data by its position in one common order: it needs the DATA shard "
        "policy, not ", AutoShardPolicyName(options.shard_policy)));
  }
  // Elastic training with a per-replica batch: each replica keeps this many
  // examples per step; the global batch (and the learning rate) follow the ring.
  const bool per_replica = strategy_->per_replica_batch();
  const int configured_workers = strategy_->cluster().configured_world_size();
  const int64_t replica_batch = options.batch_size / configured_workers;
  if (per_replica && options.batch_size % configured_workers != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "elastic training with a per-replica batch: the global batch ", options.batch_size,
        " must be a multiple of the cluster's ", configured_workers, " workers"));
  }
  // Epochs that walk the data (Keras' default): an epoch is this many passes, and
  // ends where they end, however many steps that takes. 0: epochs of `steps`
  // steps of one stream.
  const int64_t epoch_passes = epochs_walk_data ? steps / std::max<int64_t>(data.steps_per_pass, 1) : 0;
  ended_fit_.reset();
  History history;
  ProgressBar progress;
  std::vector<Callback*> callbacks = {&history};
  if (options.verbose > 0 && strategy_->is_chief()) callbacks.push_back(&progress);
  callbacks.insert(callbacks.end(), options.callbacks.begin(), options.callbacks.end());
  // Callbacks see the model's fit in progress (SaveControls) until fit returns.
  fit_callbacks_ = callbacks;
  absl::Cleanup forget_callbacks = [this] { fit_callbacks_.clear(); };
  stop_training_ = false;
  // Checkpointing callbacks end each step and epoch after the others' decisions
  // are agreed, so that a checkpoint holds the state those decisions left (a
  // resumed run must not take them again, or miss them).
  std::vector<Callback*> deciding, checkpointing;
  for (Callback* c : callbacks) (c->saves_checkpoints() ? checkpointing : deciding).push_back(c);
  const bool decides_here =
      std::any_of(callbacks.begin(), callbacks.end(), [](Callback* c) { return c->decides_per_batch(); });
  const bool log_learning_rate =
      compile_options_.optimizer.learning_rate_schedule != nullptr ||
      std::any_of(callbacks.begin(), callbacks.end(), [](Callback* c) { return c->changes_learning_rate(); });
  // Every worker must run the same steps: a difference would misalign collectives.
  // The last slot: whether any worker has a callback that decides per batch (a
  // callback on some workers only must not leave the others out of a broadcast).
  // Elastic training's batch rule too: it numbers the operations a regroup relies on.
  const int64_t batch_rule = per_replica ? 1 : 0;
  int64_t agreed[9] = {steps, -steps, options.epochs, -options.epochs, options.replica_check_steps,
                       -options.replica_check_steps, decides_here ? -1 : 0, batch_rule, -batch_rule};
  RW_RETURN_IF_ERROR(strategy_->communicator()->AllReduce(agreed, 9, DataType::kInt64, ReduceOp::kMin));
  bool decide_per_batch = agreed[6] < 0;
  if (agreed[0] != -agreed[1] || agreed[2] != -agreed[3] || agreed[4] != -agreed[5] ||
      agreed[7] != -agreed[8]) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the workers fit differently: steps per epoch, epochs, replica_check_steps or the elastic "
        "batch rule differ (this worker, rank ", strategy_->rank(), ": ", steps, ", ", options.epochs,
        ", ", options.replica_check_steps, ", ", per_replica ? "per_replica" : "global",
        "): every worker must call fit the same way"));
  }
  TrainInfo info{options.epochs, steps, options.batch_size, strategy_->num_replicas_in_sync(),
                 strategy_->is_chief(), options.shard_policy, data.seed, data.ExamplesPerPass()};
  for (Callback* c : callbacks) {
    c->set_model(this);
    RW_RETURN_IF_ERROR(c->OnTrainBegin(info));
  }
  TrainPosition start{options.initial_epoch, 0, options.initial_epoch * steps};
  std::optional<float> resumed_rate;  // Of a resume in an epoch's middle.
  if (resume_.has_value()) {
    start = *resume_;
    resume_.reset();
    const TrainingControls controls = std::move(resume_controls_);
    resume_controls_.clear();
    RW_RETURN_IF_ERROR(RestoreControls(controls));
    const auto rate = controls.find(kLearningRateControl);
    if (start.step_in_epoch > 0 && rate != controls.end() && rate->second.size() == 1) {
      // The epoch's begin already set this rate (LearningRateScheduler): it runs
      // again below and must not set it twice.
      resumed_rate = static_cast<float>(rate->second[0]);
    }
    RW_LOG(INFO) << "resuming at epoch " << start.epoch + 1 << ", step " << start.step_in_epoch
                 << " (" << start.step << " steps done)";
  }
  // Elastic training numbers the fit's operations, each ending in collectives that
  // every worker runs alike: per epoch its begin (0), its steps (1..steps), the
  // end's step breakdown, validation and callbacks (M + 1), the end's decisions
  // and checkpoints (M + 2), where M is the most steps an epoch can have:
  // `steps`, or with a per-replica batch (the count follows the ring) those of
  // one replica alone. After a regroup the survivors go on at the furthest
  // operation any of them reached: a worker behind skips to it, the one at it
  // runs it again (see SurvivePeerFailure).
  const int64_t max_epoch_steps =
      per_replica && epoch_passes > 0
          ? epoch_passes * ((data.ExamplesPerPass() + replica_batch - 1) / replica_batch)
          : steps;
  const int64_t ops_per_epoch = max_epoch_steps + 3;
  int64_t ops_done = start.epoch * ops_per_epoch;  // Operations completed (this worker).
  // Loss and metric sums of the epoch over all replicas: [loss * n, n, then each
  // metric's state (total and count; AUC's histograms)].
  std::vector<double> epoch_sums(static_cast<size_t>(2 + MetricStateSize()), 0.0);
  // What an elastic ring must fit alike (a worker that joins is checked against
  // it), from the data as the whole cluster cuts it.
  FitShape shape{steps, options.epochs, data.steps_per_pass, data.ExamplesPerPass(),
                 static_cast<int64_t>(data.seed),
                 static_cast<int64_t>(Fnv1a64(absl::StrJoin(AgreementLines(), "\n")) >> 1),
                 options.replica_check_steps, per_replica, options.batch_size, decide_per_batch,
                 start.epoch, start.step_in_epoch};
  // Steps are numbered as they ran with a per-replica batch, else as every epoch
  // has `steps` (a checkpoint of a per-replica run may count otherwise).
  shape.epoch_first_step = per_replica ? start.step - start.step_in_epoch : start.epoch * steps;
  // One iterator for the whole run: step g of the run is step g % steps_per_pass
  // of pass g / steps_per_pass (a resumed run skips to where it stopped), until a
  // regroup: then blocks from the exact example reached. A checkpoint of a
  // per-replica run records where its data stood (the global batch may have
  // changed): it resumes there; so does a per-replica fit that starts on a ring
  // smaller than the cluster (its global batch is smaller).
  const int64_t first_data_step = start.epoch * steps + start.step_in_epoch;
  const int now = strategy_->num_replicas_in_sync();
  RW_ASSIGN_OR_RETURN(const DataPosition start_at,
                      StartDataOfFit(&data, start, first_data_step, epoch_passes, per_replica,
                                     per_replica ? replica_batch * now : options.batch_size));
  shape.data_pass = start_at.pass;
  shape.data_offset = start_at.offset;
  std::unique_ptr<StepIterator> it =
      data.block_replicas > 0 ? data.IterateFrom(start_at) : data.Iterate(first_data_step);
  optimizer_->set_rate_scale(per_replica ? static_cast<float>(now) / configured_workers : 1.0f);
  // After fit the optimizer updates at its rate again (train_on_batch).
  absl::Cleanup unscaled_rate = [this] {
    optimizer_->set_rate_scale(1.0f);
    optimizer_->set_schedule_step(std::nullopt);
  };
  StepBreakdown breakdown;
  if (reducer_ != nullptr) reducer_->TakeTiming();  // Counts from this fit on.
  *in_step_collective_s_ = 0;
  Logs logs;
  // The steps of `epoch` when `done` of them are done and the next begins at
  // `from`: `steps`, or with a per-replica batch, what the rest of the epoch's
  // passes needs at the current global batch.
  auto steps_of_epoch = [&](int64_t epoch, int64_t done, const DataPosition& from) -> int64_t {
    if (!per_replica || epoch_passes == 0) return steps;
    const int64_t end_pass = (epoch + 1) * epoch_passes;
    if (from.pass >= end_pass) return done;
    return done + data.StepsLeftInPass(from) + (end_pass - from.pass - 1) * data.steps_per_pass;
  };
  shape.epoch_steps = steps_of_epoch(start.epoch, start.step_in_epoch, start_at);
  // A checkpoint's steps of the epoch were counted at the batch it had: whatever
  // the ring becomes (one replica at the worst), the epoch must still fit the
  // operations' numbering.
  int64_t most_steps = start.step_in_epoch;
  if (per_replica && epoch_passes > 0 && start.epoch < options.epochs) {
    const int64_t pass_examples = data.common.examples_per_pass();
    const int64_t one_replica_pass = (pass_examples + replica_batch - 1) / replica_batch;
    most_steps += (pass_examples - start_at.offset + replica_batch - 1) / replica_batch +
                  ((start.epoch + 1) * epoch_passes - start_at.pass - 1) * one_replica_pass;
  }
  if (start.step_in_epoch < 0 || most_steps > max_epoch_steps) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot resume at step ", start.step_in_epoch, " of epoch ", start.epoch + 1, ": with ",
        replica_batch, " examples per replica the epoch could take ", most_steps,
        " steps, more than one replica alone needs for a whole epoch (", max_epoch_steps,
        "); resume with the per-replica batch the checkpoint was written with"));
  }
  // Steps of `epoch` done before operation `op` of it (an epoch's begin that
  // runs again comes before its first step: a resumed epoch's is later).
  auto steps_done_before = [&](int64_t epoch, int64_t op) -> int64_t {
    if (op > 0) return std::min<int64_t>(op - 1, shape.epoch_steps);
    return epoch == shape.start_epoch ? shape.start_step_in_epoch : 0;
  };
  // fit_position(): `done` steps of `epoch` are done (all: the next epoch is next).
  auto note_position = [&](int64_t epoch, int64_t done) {
    fit_position_ = done >= shape.epoch_steps ? TrainPosition{epoch + 1, 0, shape.epoch_first_step + done}
                                              : TrainPosition{epoch, done, shape.epoch_first_step + done};
    if (per_replica) {
      fit_position_.data_pass = shape.data_pass;
      fit_position_.data_offset = shape.data_offset;
    }
    fit_epoch_steps_ = shape.epoch_steps;
    fit_global_batch_ = data.global_batch_size;
    // A schedule follows the data: the full ring's steps up to this position.
    if (per_replica) {
      optimizer_->set_schedule_step(shape.data_pass * shape.steps_per_pass +
                                    shape.data_offset / options.batch_size);
    }
  };
  note_position(start.epoch, start.step_in_epoch);
  // After the ring changed (`before` workers in it, -1 for a worker that joined;
  // this one had completed `mine` operations) it goes on at `ops_done`: the data
  // re-sharded at that position, one line on every worker, the callbacks told.
  // `cause`: the failure that changed it ("" when workers joined); `in_step`: it
  // may have come inside an operation (not at a step boundary, as a join does).
  auto go_on_in_new_ring = [&](const std::string& cause, int before, int64_t mine, int64_t slowest,
                               bool in_step) -> absl::StatusOr<int64_t> {
    decide_per_batch = shape.decide_per_batch;
    if (ops_done >= kFitEnded) {
      // A worker had ended fit (it evaluates): so does this one, with no
      // collective more (callbacks are not told: the final checkpoint is written).
      RW_LOG(WARNING) << "generation " << strategy_->generation() << ": " << strategy_->departed()
                      << " left: " << cause << "; " << strategy_->num_replicas_in_sync() << " of " << before
                      << " workers go on; training had ended on another worker";
      return ops_done;
    }
    const int64_t epoch = ops_done / ops_per_epoch, op = ops_done % ops_per_epoch;
    const bool step_op = op >= 1 && op <= max_epoch_steps;
    // The step every worker was in when a peer failed runs again.
    if (in_step && step_op && slowest == ops_done) ++steps_rerun_;
    const int64_t done_in_epoch = steps_done_before(epoch, op);
    const int64_t steps_done = shape.epoch_first_step + done_in_epoch;
    // The begin runs again: LearningRateScheduler must not apply its schedule twice
    // to the rate the survivors took (it is set back after the epoch's begin).
    if (op == 0 && compile_options_.optimizer.learning_rate_schedule == nullptr) {
      resumed_rate = optimizer_->learning_rate();
    }
    // The data from the root's position: the same global batch split over the
    // ring, or with a per-replica batch a global batch (and a learning rate) that
    // follows the ring's size, and the epoch's steps with it.
    const int now = strategy_->num_replicas_in_sync();
    const int64_t global_batch = per_replica ? replica_batch * now : options.batch_size;
    const DataPosition from{shape.data_pass, shape.data_offset};
    RW_ASSIGN_OR_RETURN(DistributedDataset regrouped, data.Regrouped(now, strategy_->rank(), from, global_batch));
    it.reset();  // Its prefetch thread reads `data`.
    data = std::move(regrouped);
    it = data.IterateFrom(from);
    optimizer_->set_rate_scale(per_replica ? static_cast<float>(now) / configured_workers : 1.0f);
    if (op <= max_epoch_steps) shape.epoch_steps = steps_of_epoch(epoch, done_in_epoch, from);
    note_position(epoch, done_in_epoch);
    const std::string at = op == 0 ? "its begin" : step_op ? absl::StrCat("step ", op) : "its end";
    std::string change;
    if (!strategy_->departed().empty()) change = absl::StrCat(strategy_->departed(), " left: ", cause, "; ");
    if (!strategy_->arrived().empty()) absl::StrAppend(&change, strategy_->arrived(), " joined; ");
    RW_LOG(WARNING) << "generation " << strategy_->generation() << ": " << change
                    << (before > now ? absl::StrCat(now, " of ", before, " workers go on (")
                                     : absl::StrCat(now, " workers go on (",
                                                    before > 0 ? absl::StrCat(before, " before, ") : ""))
                    << strategy_->cluster().configured_world_size() << " in the cluster), at epoch "
                    << epoch + 1 << ", " << at << " (" << steps_done << " steps done"
                    << (before > 0 && mine < ops_done ? "; this worker takes the state of one further on" : "")
                    << ")"
                    << (per_replica ? absl::StrCat("; global batch ", global_batch, ", learning rate x ", now,
                                                   "/", configured_workers, ", ", shape.epoch_steps,
                                                   " steps in this epoch")
                                    : "");
    info.replicas = strategy_->num_replicas_in_sync();
    info.is_chief = strategy_->is_chief();
    for (Callback* c : callbacks) RW_RETURN_IF_ERROR(c->OnRegroup(info));
    if (options.verbose > 0 && info.is_chief &&
        std::find(callbacks.begin(), callbacks.end(), &progress) == callbacks.end()) {
      // The chief left: this one shows the progress now.
      callbacks.push_back(&progress);
      deciding.push_back(&progress);
      progress.set_model(this);
      RW_RETURN_IF_ERROR(progress.OnTrainBegin(info));
      RW_RETURN_IF_ERROR(progress.OnEpochBegin(epoch));
    }
    return ops_done;
  };
  // A peer's failure in a collective at `where`: with elastic training the
  // survivors regroup and the operation to go on at is returned; otherwise (or
  // when that fails) the error, which ends fit.
  // `in_step`: the failure may have come inside an operation (see above). A
  // peer failing in the new ring before it went on is survived the same way.
  auto survive = [&](const absl::Status& failure, const std::string& where,
                     bool in_step = true) -> absl::StatusOr<int64_t> {
    absl::Status current = failure;
    const int before = strategy_->num_replicas_in_sync();
    const int64_t mine = ops_done;
    for (int round = 1;; ++round) {
      // Only a failed ring is survived (a callback's own error is not).
      if (!strategy_->elastic() || strategy_->joining() || !IsPeerFailure(current) ||
          !strategy_->ring_failed() || round > 3) {
        return WithContext(current, where);
      }
      int64_t slowest = 0;
      RW_RETURN_IF_ERROR(
          WithContext(SurvivePeerFailure(current, &shape, &ops_done, &slowest, &epoch_sums), where));
      absl::StatusOr<int64_t> target =
          go_on_in_new_ring(std::string(failure.message()), before, mine, slowest, in_step);
      if (target.ok()) return target;
      current = target.status();
    }
  };
  // Workers asked to join (every member learned it from the same step's sums).
  auto let_joiners_in = [&](const std::string& where) -> absl::StatusOr<int64_t> {
    const int before = strategy_->num_replicas_in_sync();
    const int64_t mine = ops_done;
    int64_t slowest = 0;
    absl::Status grown = LetJoinersIn(&shape, &ops_done, &slowest, &epoch_sums);
    if (!grown.ok()) return survive(grown, where, /*in_step=*/false);
    absl::StatusOr<int64_t> target = go_on_in_new_ring("", before, mine, slowest, false);
    if (!target.ok()) return survive(target.status(), where, /*in_step=*/false);
    return target;
  };
  // A worker that started while the job ran joins it here and goes on at the
  // members' operation: a step (the epoch's begin was theirs), or whatever
  // operation a regroup it came into resumed at.
  bool skip_begin = false, skip_end_first_part = false;
  if (strategy_->joining()) {
    int64_t slowest = 0;
    absl::Status joined = JoinRunningJob(&shape, &ops_done, &slowest, &epoch_sums);
    if (strategy_->joining()) return joined;  // It never got in.
    absl::StatusOr<int64_t> target =
        joined.ok() ? go_on_in_new_ring("", -1, -1, slowest, false) : absl::StatusOr<int64_t>(joined);
    // A member failed before this worker went on: it survives with them (with no
    // progress of its own, it takes a member's state again).
    if (!target.ok()) RW_RETURN_IF_ERROR(survive(target.status(), "joining the running job: ", false).status());
    if (ops_done >= kFitEnded) {
      // It came into a regroup of the evaluation after training: it evaluates
      // with the members (EvaluateAfterFit), having trained nothing itself.
      ended_fit_ = shape;
      return history;
    }
    const int64_t epoch = ops_done / ops_per_epoch, op = ops_done % ops_per_epoch;
    const int64_t in_epoch = steps_done_before(epoch, op);
    start = TrainPosition{epoch, in_epoch, shape.epoch_first_step + in_epoch};
    skip_begin = op >= 1;
    skip_end_first_part = op == max_epoch_steps + 2;
    if (skip_begin && compile_options_.optimizer.learning_rate_schedule == nullptr) {
      resumed_rate = optimizer_->learning_rate();  // What the members' begin left.
    }
  }
  auto unexpected = [](int64_t target, const std::string& where) {
    return absl::InternalError(absl::StrCat("after a regroup: operation ", target, " cannot follow ", where));
  };
  // A backup written after a stop (kept by a SIGTERM at the end) ends training.
  for (int64_t epoch = start.epoch; epoch < options.epochs && !stop_training_; ++epoch) {
    const int64_t begin_op = epoch * ops_per_epoch;
    const int64_t end_op = begin_op + max_epoch_steps + 1;
    const std::string epoch_begin = absl::StrCat("epoch ", epoch + 1, ", begin: ");
    int64_t first = epoch == start.epoch ? start.step_in_epoch : 0;
    // The operation after the begin: the first step not done, or the end.
    auto after_begin = [&] { return first >= shape.epoch_steps ? end_op : begin_op + first + 1; };
    while (true) {
      for (Callback* c : callbacks) RW_RETURN_IF_ERROR(c->OnEpochBegin(epoch));
      if (resumed_rate.has_value()) {
        RW_RETURN_IF_ERROR(optimizer_->set_learning_rate(*resumed_rate));
        resumed_rate.reset();
      }
      if (std::exchange(skip_begin, false)) {  // Joined after the members' begin.
        ops_done = after_begin();
        break;
      }
      absl::Status agreed = AgreeOnDecisions();
      if (agreed.ok()) {
        std::fill(epoch_sums.begin(), epoch_sums.end(), 0.0);
        ops_done = after_begin();
        break;
      }
      RW_ASSIGN_OR_RETURN(const int64_t target, survive(agreed, epoch_begin));
      if (target == begin_op) continue;  // Again, in the new ring.
      if (target != after_begin()) return unexpected(target, epoch_begin);
      std::fill(epoch_sums.begin(), epoch_sums.end(), 0.0);
      break;
    }
    struct Batch batch;
    for (int64_t step = first + 1; step <= shape.epoch_steps; ++step) {
      // Failures name the step, as users count them (epoch and step from 1).
      const std::string at_step = absl::StrCat("epoch ", epoch + 1, ", step ", step, ": ");
      // After a peer's failure: on at the operation the survivors agreed on (the
      // loop's increment takes `step` to it).
      auto go_on_after = [&](const absl::Status& failure) -> absl::Status {
        RW_ASSIGN_OR_RETURN(const int64_t target, survive(failure, at_step));
        if (target <= begin_op || target > end_op) return unexpected(target, at_step);
        step = target - begin_op - 1;
        return absl::OkStatus();
      };
      const int64_t global_step = shape.epoch_first_step + step - 1;
      strategy_->BeginStep(global_step);
      if (Timeline* timeline = Timeline::Active()) timeline->SetStep(global_step);
      TimelineSpan step_span("step", "step ", int64_t{global_step + 1});
      step_span.Arg("epoch", epoch + 1);
      step_span.Arg("step_in_epoch", step);
      const auto step_start = std::chrono::steady_clock::now();
      TimelineSpan data_span("data", "data wait");
      if (!it->Next(&batch)) {
        return WithContext(it->status().ok()
                               ? absl::InternalError("the input ended before the agreed steps")
                               : it->status(),
                           at_step);
      }
      data_span.End();
      const double data_wait_s = SecondsSince(step_start);
      // Dropout draws as a function of the step: the same on every run through it.
      SetTrainingStep(global_step);
      absl::StatusOr<float> loss =
          TrainStep(batch, static_cast<float>(it->gradient_weight()));
      if (!loss.ok()) {
        RW_RETURN_IF_ERROR(go_on_after(loss.status()));
        continue;
      }
      // The update is applied: the step is done (after the epoch's last, its end is next).
      ops_done = step == shape.epoch_steps ? end_op : begin_op + step + 1;
      const DataPosition next = it->position();
      shape.data_pass = next.pass;
      shape.data_offset = next.offset;
      note_position(epoch, step);
      std::vector<double> sums = BatchSums(batch.labels, *loss);
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
      if (!reduced.ok()) {
        RW_RETURN_IF_ERROR(go_on_after(reduced));
        continue;
      }
      // Collectives inside the step (batch statistics) count as exposed communication too.
      breakdown.AddStep(SecondsSince(step_start), data_wait_s,
                        SecondsSince(reduce_start) + std::exchange(*in_step_collective_s_, 0.0));
      const double preempted_workers = sums.back();
      sums.pop_back();
      const double joiners_waiting = sums.back();
      sums.pop_back();
      for (size_t i = 0; i < sums.size(); ++i) epoch_sums[i] += sums[i];
      logs = LogsFrom(epoch_sums);
      if (options.replica_check_steps > 0 && (global_step + 1) % options.replica_check_steps == 0) {
        absl::Status identical =
            CheckReplicasIdentical(strategy_, weights(), absl::StrCat("after step ", global_step + 1));
        if (!identical.ok()) {
          RW_RETURN_IF_ERROR(go_on_after(identical));
          continue;
        }
      }
      for (Callback* c : deciding) RW_RETURN_IF_ERROR(WithContext(c->OnBatchEnd(step, logs), at_step));
      if (decide_per_batch) {
        absl::Status decided = AgreeOnDecisions();
        if (!decided.ok()) {
          RW_RETURN_IF_ERROR(go_on_after(decided));
          continue;
        }
      }
      absl::Status saved;
      for (Callback* c : checkpointing) {
        saved = c->OnBatchEnd(step, logs);
        if (!saved.ok()) break;
      }
      if (!saved.ok()) {
        RW_RETURN_IF_ERROR(go_on_after(saved));
        continue;
      }
      if (preempted_workers > 0) {
        for (Callback* c : callbacks) RW_RETURN_IF_ERROR(WithContext(c->OnPreempted(fit_position_), at_step));
        return PreemptedError(absl::StrCat(
            "stopped after epoch ", epoch + 1, ", step ", step, ": ",
            static_cast<int64_t>(preempted_workers), " worker(s) received SIGTERM",
            terminating ? " (this one did)" : "", "; rerun the job to resume from its backup"));
      }
      if (stop_training_) break;  // As Keras: the epoch still ends (validation, callbacks).
      if (joiners_waiting > 0) {
        RW_ASSIGN_OR_RETURN(const int64_t target, let_joiners_in(at_step));
        if (target <= begin_op || target > end_op) return unexpected(target, at_step);
        step = target - begin_op - 1;
      }
    }
    // The epoch's end, first its collectives (the step breakdown, validation),
    // then what only this worker does (History, the deciding callbacks).
    ops_done = end_op;  // Also after a stop: every worker stopped at the same step.
    // A stop's checkpoint ends the epoch too (no step of it runs again).
    if (epoch_passes > 0) {
      shape.data_pass = (epoch + 1) * epoch_passes;
      shape.data_offset = 0;
    }
    note_position(epoch, shape.epoch_steps);
    const std::string epoch_end = absl::StrCat("epoch ", epoch + 1, ", end: ");
    // A worker that joined in a regroup at the end's second part skips the first.
    if (std::exchange(skip_end_first_part, false)) ops_done = end_op + 1;
    while (ops_done == end_op) {
      logs = LogsFrom(epoch_sums);
      absl::Status agreed = breakdown.EndEpoch(
          strategy_, reducer_ != nullptr ? reducer_->TakeTiming() : GradientReducer::Timing(), &logs);
      if (!agreed.ok()) agreed = WithContext(agreed, "agreeing on the step breakdown: ");
      absl::StatusOr<EvaluateResult> val;
      if (agreed.ok() && options.validation_data != nullptr) {
        val = Evaluate(*options.validation_data, options.batch_size);
        agreed = val.status();
      }
      if (agreed.ok()) {
        if (options.validation_data != nullptr) {
          logs["val_loss"] = val->loss;
          for (const auto& [name, value] : val->metrics) logs["val_" + name] = value;
        }
        history.AddEpochExamples(static_cast<int64_t>(epoch_sums[1]));
        if (log_learning_rate) logs["learning_rate"] = optimizer_->learning_rate();
        for (Callback* c : deciding) RW_RETURN_IF_ERROR(c->OnEpochEnd(epoch, logs));
        ops_done = end_op + 1;
        break;
      }
      RW_ASSIGN_OR_RETURN(const int64_t target, survive(agreed, epoch_end));
      if (target == end_op) continue;      // Again, in the new ring.
      if (target == end_op + 1) break;     // Another worker got through it.
      return unexpected(target, epoch_end);
    }
    // Then the chief's decisions, and the checkpoints that keep them.
    while (true) {
      absl::Status agreed = WithContext(AgreeOnDecisions(), epoch_end);
      for (Callback* c : checkpointing) {
        if (!agreed.ok()) break;
        agreed = c->OnEpochEnd(epoch, logs);
      }
      if (agreed.ok()) {
        ops_done = end_op + 2;
        // The next epoch: its first step and how many it has (a worker that did
        // not get through this took them from one that did).
        shape.epoch_first_step += shape.epoch_steps;
        shape.epoch_steps = steps_of_epoch(epoch + 1, 0, {shape.data_pass, shape.data_offset});
        break;
      }
      RW_ASSIGN_OR_RETURN(const int64_t target, survive(agreed, epoch_end));
      if (target == end_op + 1) continue;  // Again, in the new ring.
      if (target == end_op + 2) break;     // Another worker got through it.
      return unexpected(target, epoch_end);
    }
    if (stop_training_) break;
  }
  // Every callback ends (one may run collectives), even after another failed; then
  // every worker learns how it went everywhere (the last operation of the fit).
  const int64_t end_train_op = ops_done;
  while (true) {
    absl::Status ended;
    for (Callback* c : callbacks) ended.Update(c->OnTrainEnd(logs));
    absl::Status agreed = AgreeTrainingEnded(ended);
    if (agreed.ok()) break;
    // A worker that got through it has left fit: the others end it again.
    RW_ASSIGN_OR_RETURN(const int64_t target, survive(agreed, "ending training: "));
    if (target == kFitEnded) break;  // It ended on another worker (it evaluates).
    if (target != end_train_op) return unexpected(target, "the end of training");
  }
  for (Callback* c : callbacks) RW_RETURN_IF_ERROR(c->OnTrainCommitted());
  ended_fit_ = shape;
  return history;
}

}  // namespace ringwork
