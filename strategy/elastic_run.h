// Elastic training's machinery in one place: the numbering of a training run's
// operations, and what happens when the ring changes under it (a peer failed and
// the survivors regroup; workers asked to join and the ring grows; this worker
// starts while its job runs and joins it), ending with every member at the same
// operation with the same training state.
//
//   FitOperations ops{.max_epoch_steps = steps};
//   ElasticRun run(strategy, &replica, shape, /*progress=*/ops.Begin(epoch));
//   absl::Status step = ...;                      // a collective failed
//   if (run.CanSurvive(step)) {
//     int64_t slowest = 0;
//     RW_RETURN_IF_ERROR(run.SurvivePeerFailure(step, &slowest, &epoch_sums));
//     // go on at operation run.progress(), with run.shape()'s data position
//   }
//
// The training loop (keras/fit_loop.h) calls it at named points; a custom
// training loop can number its operations and call it the same way. The replica
// it keeps in step (the model) is reached only through ElasticReplica.
//
// Threads: the training thread only.
#ifndef RINGWORK_STRATEGY_ELASTIC_RUN_H_
#define RINGWORK_STRATEGY_ELASTIC_RUN_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "strategy/multi_worker_mirrored_strategy.h"

namespace ringwork {

// What elastic training needs of the replica it keeps in step with the others.
class ElasticReplica {
 public:
  virtual ~ElasticReplica() = default;
  // Before the ring changes: stop using its communicator (the gradient reducer
  // and its thread go).
  virtual void LeaveRing() = 0;
  // After it changed: what the replica uses of the new ring (a gradient reducer).
  virtual void EnterRing() = 0;
  // Takes rank `root`'s training state (weights, optimizer slots and iterations,
  // the learning rate, the callbacks' state). Collective.
  virtual absl::Status AdoptStateOf(int root) = 0;
};

// A training run's operations, numbered alike on every worker, each ending in
// collectives that every worker runs: per epoch its begin (0), its steps
// (1..max_epoch_steps), the end's step breakdown, validation and callbacks
// (max_epoch_steps + 1), the end's decisions and checkpoints (max_epoch_steps + 2).
// `max_epoch_steps` is the most steps an epoch can have (with a per-replica batch
// the count follows the ring: those of one replica alone). Progress is the count
// of operations completed, which is also the number of the next one.
struct FitOperations {
  int64_t max_epoch_steps = 0;

  int64_t per_epoch() const { return max_epoch_steps + 3; }
  int64_t Begin(int64_t epoch) const { return epoch * per_epoch(); }
  // Step `step` (from 1) of `epoch`.
  int64_t Step(int64_t epoch, int64_t step) const { return Begin(epoch) + step; }
  int64_t End(int64_t epoch) const { return Begin(epoch) + max_epoch_steps + 1; }
  int64_t Decisions(int64_t epoch) const { return End(epoch) + 1; }
  int64_t EpochOf(int64_t op) const { return op / per_epoch(); }
  // 0 for the begin, the step for a step, max_epoch_steps + 1 and + 2 for the end.
  int64_t InEpoch(int64_t op) const { return op % per_epoch(); }
  bool IsStep(int64_t op) const {
    const int64_t in_epoch = InEpoch(op);
    return in_epoch >= 1 && in_epoch <= max_epoch_steps;
  }
};

// What every worker of an elastic ring must run alike. A worker that joins takes
// the ring's (its root's) and is refused (FAILED_PRECONDITION, exit 7) if its own
// differs in the compared part.
struct FitShape {
  // Compared.
  int64_t steps = 0, epochs = 0, steps_per_pass = 0, examples_per_pass = 0;
  int64_t data_seed = 0, model = 0, replica_check_steps = 0;
  bool per_replica_batch = false;  // ElasticBatch::kPerReplica
  int64_t global_batch = 0;        // As fit was called (the cluster's).
  // Taken, not compared: a per-batch decider on any worker, and where this fit
  // began (an epoch's begin that runs again starts at its first step).
  bool decide_per_batch = false;
  int64_t start_epoch = 0, start_step_in_epoch = 0;
  // Taken, and kept current by the loop as its operations complete: where the
  // next step's examples begin, the steps before the current epoch, and that
  // epoch's steps (with a per-replica batch they follow the ring's size).
  int64_t data_pass = 0, data_offset = 0, epoch_first_step = 0, epoch_steps = 0;
  // Compared: MultiWorkerMirroredStrategy::ElasticSettingsHash().
  int64_t elastic_settings = 0;
};

class ElasticRun {
 public:
  // The progress of a worker whose run ended (beyond any operation): survivors
  // still ending theirs learn from it that training ended.
  static constexpr int64_t kEnded = int64_t{1} << 40;

  // `progress`: operations this worker completed.
  ElasticRun(MultiWorkerMirroredStrategy* strategy /* not owned */,
             ElasticReplica* replica /* not owned */, FitShape shape, int64_t progress)
      : strategy_(strategy), replica_(replica), shape_(shape), progress_(progress) {}

  FitShape& shape() { return shape_; }
  const FitShape& shape() const { return shape_; }
  int64_t progress() const { return progress_; }
  // Operation `op` is the next one: those before it are done.
  void set_progress(int64_t op) { progress_ = op; }

  // Whether `failure` ended a collective in a way a regroup survives: elastic
  // training, a member (not a worker still joining), and the ring failed (a peer
  // or the network), not an error of this worker's own.
  bool CanSurvive(const absl::Status& failure) const;

  // `failure` (CanSurvive) ended a collective. The survivors regroup (a
  // minority, or a failed regroup, returns its error), agree to go on at the
  // furthest progress any of them made (progress() becomes it; `*slowest` is the
  // least) and take that worker's training state and its `*carried` values (the
  // epoch's loss and metric sums). A peer failing in the new ring before the
  // state went round is survived the same way, up to 3 rounds.
  absl::Status SurvivePeerFailure(const absl::Status& failure, int64_t* slowest,
                                  std::vector<double>* carried);
  // Members, at a step boundary where the all-reduced count of workers waiting to
  // join was positive: the ring grows by them (MultiWorkerMirroredStrategy::Grow),
  // then goes on as after SurvivePeerFailure. A peer failure meanwhile is
  // returned (survive it).
  absl::Status LetJoinersIn(int64_t* slowest, std::vector<double>* carried);
  // A worker that started while its job ran (strategy joining()): joins the ring
  // at its members' next step boundary and takes their state and progress.
  absl::Status JoinRunningJob(int64_t* slowest, std::vector<double>* carried);

 private:
  // After the ring changed: the replica enters it; the furthest progress and the
  // state and carried values of the lowest rank that made it. A negative
  // progress: this worker joins (it made none).
  absl::Status AgreeAfterRegroup(int64_t* slowest, std::vector<double>* carried);

  MultiWorkerMirroredStrategy* strategy_;
  ElasticReplica* replica_;
  FitShape shape_;
  int64_t progress_;
};

}  // namespace ringwork

#endif  // RINGWORK_STRATEGY_ELASTIC_RUN_H_
