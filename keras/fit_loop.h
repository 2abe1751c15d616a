// Model::Fit's training loop, one object per call, made of the parts of a fit:
// the start (the data, the agreement of every worker on how fit runs, the
// callbacks' begin, a resumed position), each epoch's begin, one step, the
// epoch's end (step breakdown, validation, the callbacks), the chief's decisions
// and the checkpoints that keep them, and the end of training. Elastic training
// (strategy/elastic_run.h) numbers these operations; when the ring changes the
// loop goes on at the operation the members agreed on (fit_loop_regroup.cc).
//
//   absl::StatusOr<History> Model::Fit(const Dataset& train, const FitOptions& options) {
//     return FitLoop(this, options).Run(train);           // one loop, run once
//   }
//
// Collectives: every worker's loop runs the same operations in the same order,
// each ending in an all-reduce, so that no worker gets through one before every
// worker reached it.
//
// Threads: the training thread only.
#ifndef RINGWORK_KERAS_FIT_LOOP_H_
#define RINGWORK_KERAS_FIT_LOOP_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "keras/callbacks.h"
#include "keras/input_report.h"
#include "keras/model.h"
#include "keras/step_breakdown.h"
#include "strategy/distributed_dataset.h"
#include "strategy/distributed_pipeline.h"
#include "strategy/elastic_run.h"

namespace ringwork {

// What every worker's fit must agree on before its first collective of training;
// a difference would misalign the collectives (FAILED_PRECONDITION, exit 7).
struct FitAgreement {
  int64_t steps_per_epoch = 0;
  int64_t epochs = 0;
  int64_t replica_check_steps = 0;
  // Elastic training's batch rule: it numbers the operations a regroup relies on.
  bool per_replica_batch = false;
  // Taken, not compared: whether any worker has a callback that decides per batch
  // (a callback on some workers only must not leave the others out of a broadcast).
  bool decide_per_batch = false;
  // Compared: MultiWorkerMirroredStrategy::ElasticSettings() (all but the first
  // only where --min_workers is set).
  std::vector<std::pair<std::string, int64_t>> elastic_settings;
};

// Agrees `*mine` with every worker (one MIN all-reduce): its decide_per_batch
// becomes whether any worker's is set; the rest must be equal everywhere.
absl::Status AgreeOnFit(MultiWorkerMirroredStrategy* strategy, FitAgreement* mine);

class FitLoop {
 public:
  ~FitLoop();
  FitLoop(const FitLoop&) = delete;
  FitLoop& operator=(const FitLoop&) = delete;

 private:
  friend class Model;  // Model::Fit makes one and runs it once.
  FitLoop(Model* model /* not owned */, const FitOptions& options);
  // Runs fit on `train` (every worker calls it): in-memory examples, or a
  // streamed pipeline (fit_loop_stream.cc).
  absl::StatusOr<History> Run(const Dataset& train);
  absl::StatusOr<History> Run(const Pipeline& train);
  absl::StatusOr<History> Run(const DatasetFn& make_train);  // Each worker's own.
  // The epochs and the end, once started.
  absl::StatusOr<History> Train();

  // The start (fit_loop_start.cc): checks the data and options, agrees with every
  // worker, begins the callbacks, takes a resumed position and puts the data there.
  absl::Status Start(const Dataset& train);
  absl::Status CountSteps();
  void SortCallbacks();
  absl::Status BeginTraining(bool decide_per_batch);
  // Where the run starts: the operations' numbering and the elastic run, the data
  // put at the start (a resume's position), the optimizer's rate scale (elastic,
  // per-replica batch), the timings reset, the first epoch's steps (a resume
  // checked against the numbering), the model's fit_position().
  absl::Status PositionData();
  // Where fit's data starts: after `first_data_step` steps, or where a checkpoint
  // of a per-replica run recorded it (refused, exit 7, by a run with a global
  // batch, or outside the epoch); the data is re-sharded in blocks of
  // `global_batch` from there when that differs, or when a per-replica fit
  // starts on a ring smaller than the cluster.
  absl::StatusOr<DataPosition> StartDataOfFit(int64_t first_data_step, int64_t global_batch);
  // The start with a streamed pipeline: bound to the model's input and target,
  // read by a DistributedPipeline; epochs of unknown length (kUnknownSteps) that
  // end when every worker's data for the pass has.
  absl::Status StartStream(const Pipeline& train);
  // The next step's batch into batch_ and its gradient weight; false when a
  // stream's pass ended on every worker (the epoch is over).
  absl::StatusOr<bool> NextBatch(int64_t epoch, int64_t step, double* weight);
  // FitOptions::class_weight into batch_'s per-example weights.
  void ApplyClassWeights();
  // A worker that started while the job ran joins it here and goes on at the
  // members' operation. `*ended`: it came into the evaluation after training.
  absl::Status JoinRunningJob(bool* ended);

  // An epoch (fit_loop.cc), in its operations.
  absl::Status RunEpoch(int64_t epoch);
  absl::Status BeginEpoch(int64_t epoch, int64_t first);
  // Step `step` (from 1) of `epoch`: its batch, TrainStep, the metrics' all-reduce;
  // returns the step to run next (after a regroup: the one the members go on at;
  // kEpochStopped when a callback stopped training).
  absl::StatusOr<int64_t> RunStep(int64_t epoch, int64_t step);
  // What the step's all-reduce brought besides the metrics.
  struct StepSignals {
    double preempted_workers = 0;  // Workers that received SIGTERM.
    bool terminating = false;      // This one did.
    double joiners_waiting = 0;    // Workers asking to join (elastic training).
  };
  // What follows a step's update: the replica check, the callbacks, the chief's
  // per-step decisions, the checkpoints, a preemption, the joiners. As RunStep.
  absl::StatusOr<int64_t> EndStep(int64_t epoch, int64_t step, int64_t global_step,
                                  const StepSignals& signals);
  // Failures name the step, as users count them (epoch and step from 1).
  static std::string AtStep(int64_t epoch, int64_t step);
  // After a peer's failure (or workers joining) in step `step`: the step the
  // members go on at, from the operation `target` they agreed on.
  absl::StatusOr<int64_t> GoOnAt(int64_t epoch, int64_t step,
                                 const absl::StatusOr<int64_t>& target) const;
  // The epoch's end: its collectives (the step breakdown, validation) and what
  // only this worker does (History, the deciding callbacks).
  absl::Status EndEpoch(int64_t epoch);
  // Validation after an epoch into `logs` ("val_" + each name). Collective.
  absl::Status Validate(Logs* logs);
  // Then the chief's decisions, and the checkpoints that keep them.
  absl::Status DecideAndCheckpoint(int64_t epoch);
  // Every callback ends (one may run collectives), even after another failed;
  // then every worker learns how it went everywhere.
  absl::Status End();

  // When the ring changes (fit_loop_regroup.cc). A peer's failure in a collective
  // at `where`: with elastic training the survivors regroup and the operation to
  // go on at is returned; otherwise (or when that fails) the error, which ends
  // fit. `in_step`: the failure may have come inside an operation (not at a step
  // boundary, as a join does).
  absl::StatusOr<int64_t> Survive(const absl::Status& failure, const std::string& where,
                                  bool in_step = true);
  // Workers asked to join (every member learned it from the same step's sums).
  absl::StatusOr<int64_t> LetJoinersIn(const std::string& where);
  // After the ring changed (`before` workers in it, -1 for a worker that joined;
  // this one had completed `mine` operations) it goes on at the run's progress:
  // the data re-sharded at that position, one line on every worker, the
  // callbacks told. `cause`: the failure that changed it ("" when workers joined).
  absl::StatusOr<int64_t> GoOnInNewRing(const std::string& cause, int before, int64_t mine,
                                        int64_t slowest, bool in_step);
  // The steps of `epoch` when `done` of them are done and the next begins at
  // `from`: steps_, or with a per-replica batch what the rest of the epoch's
  // passes needs at the current global batch.
  int64_t StepsOfEpoch(int64_t epoch, int64_t done, const DataPosition& from) const;
  // Steps of `epoch` done before operation `op` of it (an epoch's begin that runs
  // again comes before its first step: a resumed epoch's is later).
  int64_t StepsDoneBefore(int64_t epoch, int64_t op) const;
  // The model's fit_position(): `done` steps of `epoch` are done (all: the next
  // epoch is next).
  void NotePosition(int64_t epoch, int64_t done);
  static absl::Status Unexpected(int64_t target, const std::string& where);

  static constexpr int64_t kEpochStopped = INT64_MAX;
  // A streamed epoch's steps until its data ends: more than any epoch has.
  static constexpr int64_t kUnknownSteps = int64_t{1} << 30;

  Model* const model_;
  FitOptions options_;  // Its defaults resolved by Run (batch size, shard policy).
  MultiWorkerMirroredStrategy* strategy_ = nullptr;  // The model's, once it is ready.
  DistributedDataset data_;
  // Keras: an epoch is one walk through the dataset (its passes, each in a new
  // order every epoch), or `steps_per_epoch` steps of one stream that goes on
  // across epochs (pass after pass for a repeated dataset).
  int64_t steps_ = 0;
  // Epochs that walk the data (Keras' default): an epoch is this many passes, and
  // ends where they end, however many steps that takes. 0: epochs of `steps_`
  // steps of one stream.
  int64_t epoch_passes_ = 0;
  // Elastic training with a per-replica batch: each replica keeps this many
  // examples per step; the global batch (and the learning rate) follow the ring.
  bool per_replica_ = false;
  int configured_workers_ = 0;
  int64_t replica_batch_ = 0;

  History history_;
  ProgressBar progress_bar_;
  // Checkpointing callbacks end each step and epoch after the others' decisions
  // are agreed, so that a checkpoint holds the state those decisions left (a
  // resumed run must not take them again, or miss them).
  std::vector<Callback*> callbacks_, deciding_, checkpointing_;  // Not owned.
  bool decides_here_ = false;      // A callback of this worker decides per batch.
  bool decide_per_batch_ = false;  // One of any worker's does.
  bool log_learning_rate_ = false;
  TrainInfo info_;
  TrainPosition start_;
  std::optional<float> resumed_rate_;  // Of a resume in an epoch's middle.

  // The numbering of this run's operations, which every worker computes alike.
  FitOperations ops_;
  // The operations this worker completed and what an elastic ring must fit alike
  // (a worker that joins is checked against it), from the data as the whole
  // cluster cuts it. Made once the start knows them.
  std::optional<ElasticRun> run_;
  // Loss and metric sums of the epoch over all replicas: [loss * n, n, then each
  // metric's state (total and count; AUC's histograms)].
  std::vector<double> epoch_sums_;
  std::unique_ptr<StepIterator> it_;  // Reads data_: declared after it.
  // A streamed pipeline instead (then data_ and it_ are unused): its reader, the
  // features bound to the model's input and target, and its batch.
  InputReport input_report_;  // The stream's stages, each epoch (the stream writes into it).
  std::unique_ptr<DistributedPipeline> stream_;
  PipelineBinding binding_;
  Element stream_batch_;
  StepBreakdown breakdown_;
  Logs logs_;
  struct Batch batch_;
  bool per_worker_ = false;  // The stream is this worker's own (a dataset function's).
  // A worker that joined after the members' begin of an epoch skips it; one that
  // joined in a regroup at the end's second part skips the first.
  bool skip_begin_ = false, skip_end_first_part_ = false;
  // What the destructor gives back: the model's callbacks of this fit, the
  // optimizer's rate scale and schedule step (each once it was set).
  bool callbacks_given_ = false, rate_scaled_ = false;
};

}  // namespace ringwork

#endif  // RINGWORK_KERAS_FIT_LOOP_H_
