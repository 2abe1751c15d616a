// Sequential's part of elastic training: surviving a peer's failure inside fit,
// letting workers that start again join, and joining a running job
// (strategy/multi_worker_mirrored_strategy.h, Options::min_workers).
#include <algorithm>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/crash_points.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "keras/sequential.h"
#include "keras/training_state.h"
#include "observability/timeline.h"

namespace ringwork {

absl::StatusOr<DataPosition> Sequential::StartDataOfFit(DistributedDataset* data, const TrainPosition& start,
                                                        int64_t first_data_step, int64_t epoch_passes,
                                                        bool per_replica, int64_t global_batch) {
  DataPosition start_at = data->PositionAfter(first_data_step);
  const int now = strategy_->num_replicas_in_sync();
  const bool recorded = start.data_pass >= 0 && !(DataPosition{start.data_pass, start.data_offset} == start_at);
  if (!recorded && !(per_replica && now != strategy_->cluster().configured_world_size())) return start_at;
  if (recorded) {
    const DataPosition at{start.data_pass, start.data_offset};
    const int64_t pass_examples = data->common.examples_per_pass();
    const bool in_epoch = epoch_passes == 0 || (at.pass >= 0 && at.pass / epoch_passes == start.epoch);
    if (!per_replica) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the checkpoint was written by elastic training with a per-replica batch after its ring "
          "changed size (its data stood at pass ", at.pass, ", example ", at.offset, "): resume it "
          "with --elastic_batch=per_replica (and --min_workers)"));
    }
    if (pass_examples == 0 || at.offset < 0 || at.offset >= pass_examples || !in_epoch) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot resume at the checkpoint's data position (pass ", at.pass, ", example ", at.offset,
          ") in epoch ", start.epoch + 1, ": it needs the DATA shard policy and a position inside "
          "that epoch's ", pass_examples, " examples per pass"));
    }
    start_at = at;
  }
  RW_ASSIGN_OR_RETURN(*data, data->Regrouped(now, strategy_->rank(), start_at, global_batch));
  return start_at;
}

absl::Status Sequential::SurvivePeerFailure(const absl::Status& failure, FitShape* shape, int64_t* progress,
                                            int64_t* slowest, std::vector<double>* epoch_sums) {
  absl::Status cause = failure;
  for (int round = 1;; ++round) {
    TimelineSpan span("elastic", "survive a peer failure");
    RW_LOG(WARNING) << "elastic training: the ring failed: " << cause.message()
                    << "; regrouping with the workers still running";
    // The reducer's thread leaves the failed collective (the transport is aborted)
    // before the runtime it uses goes away.
    strategy_->Abort(cause);
    reducer_.reset();
    RW_RETURN_IF_ERROR(strategy_->Regroup(cause));
    absl::Status agreed = AgreeAfterRegroup(shape, progress, slowest, epoch_sums);
    // Another worker failed in the new ring before the state went round: again.
    if (agreed.ok() || !IsPeerFailure(agreed) || !strategy_->ring_failed() || round == 3) return agreed;
    cause = agreed;
  }
}

absl::StatusOr<EvaluateResult> Sequential::EvaluateAfterFit(const Dataset& data, int64_t batch_size) {
  CrashPoint("final_evaluate");  // Tests: a worker dies as the final evaluation starts.
  for (int round = 1;; ++round) {
    absl::StatusOr<EvaluateResult> result = Evaluate(data, batch_size);
    if (result.ok() || round > 3 || !ended_fit_.has_value() || !strategy_->elastic() ||
        strategy_->joining() || !IsPeerFailure(result.status()) || !strategy_->ring_failed()) {
      return result;
    }
    // The workers still running may include some still ending fit (the failure
    // came in its last operation): they regroup there, and learn from this
    // worker's progress (past every operation of fit) that training ended. All
    // run the same agreement, then evaluate.
    const int before = strategy_->num_replicas_in_sync();
    FitShape shape = *ended_fit_;
    int64_t progress = kFitEnded, slowest = 0;
    std::vector<double> sums(static_cast<size_t>(2 + MetricStateSize()), 0.0);
    RW_RETURN_IF_ERROR(SurvivePeerFailure(result.status(), &shape, &progress, &slowest, &sums));
    RW_LOG(WARNING) << "generation " << strategy_->generation() << ": " << strategy_->departed()
                    << " left: " << result.status().message() << "; " << strategy_->num_replicas_in_sync()
                    << " of " << before << " workers evaluate again ("
                    << strategy_->cluster().configured_world_size() << " in the cluster)";
  }
}

absl::Status Sequential::LetJoinersIn(FitShape* shape, int64_t* progress, int64_t* slowest,
                                      std::vector<double>* epoch_sums) {
  RW_LOG(INFO) << "elastic training: letting the workers that asked to join in, after "
               << *progress << " operations of fit";
  reducer_.reset();  // Idle between steps; made anew over the next ring.
  RW_RETURN_IF_ERROR(strategy_->Grow());
  CrashPoint("grow");  // Tests: a member dies before the joiners have the state.
  return AgreeAfterRegroup(shape, progress, slowest, epoch_sums);
}

absl::Status Sequential::JoinRunningJob(FitShape* shape, int64_t* progress, int64_t* slowest,
                                        std::vector<double>* epoch_sums) {
  RW_LOG(INFO) << "elastic training: waiting for the running job's next step boundary to join it";
  reducer_.reset();
  RW_RETURN_IF_ERROR(strategy_->JoinRunningJob());
  *progress = -1;  // Behind every member: it takes their state.
  return AgreeAfterRegroup(shape, progress, slowest, epoch_sums);
}

absl::Status Sequential::AgreeAfterRegroup(FitShape* shape, int64_t* progress, int64_t* slowest,
                                           std::vector<double>* epoch_sums) {
  reducer_ = strategy_->MakeGradientReducer(variables(), /*allow_overlap=*/!layer_collectives_);
  // Every worker runs fit's operations in the same order, and one that completed
  // an operation saw every replica's part of it (a step: all gradients); replicas
  // are identical after every step. So the ring goes on at the furthest progress
  // any member made, with that worker's state (the lowest rank among those, so
  // that every worker picks the same one). A joining worker made none.
  Communicator* comm = strategy_->communicator();
  const int64_t world = comm->world_size();
  // A worker with no progress (one that joins) does not count as the slowest.
  int64_t key[2] = {*progress * world + (world - 1 - comm->rank()),
                    *progress < 0 ? std::numeric_limits<int64_t>::min() : -*progress};
  RW_RETURN_IF_ERROR(comm->AllReduce(key, 2, DataType::kInt64, ReduceOp::kMax));
  const int root = static_cast<int>(world - 1 - key[0] % world);
  // What every worker must fit alike: the root's (a worker that joined built its
  // model and data alone). Compared: the first 9; taken: the rest.
  constexpr int kCompared = 9, kWords = 16;
  const int64_t mine[kCompared] = {shape->steps, shape->epochs, shape->steps_per_pass,
                                   shape->examples_per_pass, shape->data_seed, shape->model,
                                   shape->replica_check_steps, shape->per_replica_batch ? 1 : 0,
                                   shape->global_batch};
  int64_t fit[kWords] = {0, 0, 0, 0, 0, 0, 0, 0, 0, shape->decide_per_batch ? 1 : 0, shape->start_epoch,
                         shape->start_step_in_epoch, shape->data_pass, shape->data_offset,
                         shape->epoch_first_step, shape->epoch_steps};
  std::copy(mine, mine + kCompared, fit);
  RW_RETURN_IF_ERROR(comm->Broadcast(fit, kWords, DataType::kInt64, root));
  if (!std::equal(mine, mine + kCompared, fit)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "this worker fits differently from the ring it ", *progress < 0 ? "joins" : "is in",
        " (steps per epoch, epochs, steps per pass, examples per pass, data seed, model hash, "
        "replica_check_steps, per-replica batch, global batch): ", absl::StrJoin(mine, ", "), " here, ",
        absl::StrJoin(fit, fit + kCompared, ", "),
        " there; every worker must run the same program with the same flags"));
  }
  RW_RETURN_IF_ERROR(AdoptTrainingStateOf(*this, root));
  RW_RETURN_IF_ERROR(comm->Broadcast(epoch_sums->data(), epoch_sums->size(), DataType::kFloat64, root));
  // `*progress` changes only now that the state is taken: a failure before
  // leaves this worker where it was.
  shape->decide_per_batch = fit[9] != 0;
  shape->start_epoch = fit[10];
  shape->start_step_in_epoch = fit[11];
  shape->data_pass = fit[12];
  shape->data_offset = fit[13];
  shape->epoch_first_step = fit[14];
  shape->epoch_steps = fit[15];
  *progress = key[0] / world;
  *slowest = -key[1];
  return absl::OkStatus();
}

}  // namespace ringwork
