// A Keras-like Sequential model: a stack of layers, compiled with a loss, an
// optimizer and metrics, trained with fit(), measured with evaluate(), used with
// predict(). Built inside a MultiWorkerMirroredStrategy scope it trains on every
// worker of the cluster in lock step; otherwise it trains alone.
//
//   auto strategy = MultiWorkerMirroredStrategy::Create();          // TF_CONFIG
//   auto scope = (*strategy)->scope();
//   Sequential model;
//   model.Add(Flatten());
//   model.Add(Dense(256, {.activation = "relu"}));
//   model.Add(Dense(10));
//   RW_RETURN_IF_ERROR(model.Compile({.loss = {"sparse_categorical_crossentropy", true},
//                                     .optimizer = {.name = "adam"}}));
//   absl::StatusOr<History> history = model.Fit(train, {.epochs = 5, .batch_size = 256});
//   absl::StatusOr<EvaluateResult> test = model.Evaluate(test_set);
//
// fit()'s batch_size is the global batch: each of the N replicas takes batch / N
// examples per step of its shard of the data; losses and metrics are reported over
// all replicas, so every worker returns the same numbers.
#ifndef RINGWORK_KERAS_SEQUENTIAL_H_
#define RINGWORK_KERAS_SEQUENTIAL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/dataset.h"
#include "keras/callbacks.h"
#include "keras/layer.h"
#include "keras/layers.h"
#include "keras/losses.h"
#include "keras/metrics.h"
#include "keras/optimizers.h"
#include "kernels/kernel_context.h"
#include "strategy/gradient_reducer.h"
#include "strategy/multi_worker_mirrored_strategy.h"

namespace ringwork {

struct CompileOptions {
  LossSpec loss;
  OptimizerSpec optimizer;
  std::vector<std::string> metrics = {"accuracy"};
  Precision precision = Precision::kFloat32;
  // Intra-op threads (TensorFlow's intra_op_parallelism_threads); 0: this
  // process's cores divided by the workers on this host.
  int intra_op_threads = 0;
  uint64_t seed = 42;  // Initialisation, shuffling and dropout.
};

struct FitOptions {
  int64_t epochs = 1;
  int64_t batch_size = 32;  // Global: over all replicas.
  const Dataset* validation_data = nullptr;  // Evaluated after every epoch.
  int verbose = 1;  // 1: progress bar on the chief; 0: silent.
  std::vector<Callback*> callbacks;
  AutoShardPolicy shard_policy = AutoShardPolicy::kData;
  // 0: an epoch is one pass over the data (its last global batch may be short).
  // Otherwise Keras' steps_per_epoch: epochs of this many steps from one stream
  // that goes on across epochs; more than a pass needs a Repeat()ed dataset.
  int64_t steps_per_epoch = 0;
  int64_t initial_epoch = 0;
  // Every this many steps (and at each checkpoint) the workers compare a hash of
  // their weights: replicas that drifted apart end the job (exit 7). 0: never.
  int64_t replica_check_steps = 100;
};

struct EvaluateResult {
  double loss = 0;
  std::map<std::string, double> metrics;
  int64_t examples = 0;  // Over all replicas.
};

class Sequential {
 public:
  // Uses the strategy of the current scope, if any.
  Sequential();
  explicit Sequential(std::vector<std::unique_ptr<Layer>> layers);
  ~Sequential();
  Sequential(Sequential&&) noexcept;  // Everything it owns is held by pointer.
  Sequential& operator=(Sequential&&) noexcept;

  void Add(std::unique_ptr<Layer> layer);
  // Creates the variables for inputs of `input_shape` (no batch dimension) and
  // makes them equal on every replica (the chief's values). fit/evaluate/predict
  // build on first use.
  absl::Status Build(const Shape& input_shape);
  absl::Status Compile(const CompileOptions& options);

  absl::StatusOr<History> Fit(const Dataset& train, const FitOptions& options);
  absl::StatusOr<EvaluateResult> Evaluate(const Dataset& data, int64_t batch_size = 256);
  // Evaluate once fit ended on every worker: with elastic training a peer's failure
  // in it regroups the workers still running (replicas are identical after fit)
  // and they evaluate again (up to 3 times); otherwise as Evaluate.
  absl::StatusOr<EvaluateResult> EvaluateAfterFit(const Dataset& data, int64_t batch_size = 256);
  // Outputs for `x` [count, ...] (probabilities when the model ends in a softmax).
  absl::StatusOr<Tensor> Predict(const Tensor& x, int64_t batch_size = 256);
  std::string Summary() const;

  // One training step on this replica's `batch`: forward, backward, gradients
  // averaged over the replicas, optimizer update. Every replica must call it.
  // `weight`: this replica's share of the step's examples (DistributedDataset::
  // GradientWeightAt); an empty batch takes part with nothing. Returns this
  // replica's mean loss (0 for an empty batch).
  absl::StatusOr<float> TrainStep(const struct Batch& batch, float weight = 1.f);

  // The next Fit starts at `position` instead of its initial_epoch (a restored
  // backup: BackupAndRestore calls it from OnTrainBegin), and gives the learning
  // rate and the callbacks' state in `controls` back after every OnTrainBegin.
  void ResumeAt(const TrainPosition& position, TrainingControls controls = {}) {
    resume_ = position;
    resume_controls_ = std::move(controls);
  }
  // During fit: where training is (the next step; after an epoch's last step, the
  // next epoch), for callbacks that save or log it.
  const TrainPosition& fit_position() const { return fit_position_; }
  // During fit: the current epoch's steps and the global batch (with a per-replica
  // batch both follow the ring's size), for the progress bar.
  int64_t fit_epoch_steps() const { return fit_epoch_steps_; }
  int64_t fit_global_batch() const { return fit_global_batch_; }
  // What steers training besides the weights, for checkpoints: the learning rate
  // (unless a schedule sets it) and the state of fit's callbacks (state_name ->
  // values; a name used twice gets "#2", ...).
  TrainingControls SaveControls() const;
  absl::Status RestoreControls(const TrainingControls& controls);

  // Keras' `model.stop_training`: a callback sets it to end fit after the current
  // step (from OnBatchEnd) or epoch (from OnEpochEnd); the chief's value decides.
  void set_stop_training(bool stop) { stop_training_ = stop; }
  bool stop_training() const { return stop_training_; }
  // Sets every layer's count of training steps run (their random draws).
  void SetTrainingStep(int64_t step);

  // Elastic training: the steps that fits of this model ran again because every
  // worker was in them when a regroup interrupted them (metrics JSON "steps_lost").
  int64_t steps_rerun() const { return steps_rerun_; }

  bool built() const { return built_; }
  // Trainable variables.
  std::vector<Variable*> variables() const;
  // Every weight: trainable and non-trainable (moving statistics), layer by layer
  // (Keras' model.weights). Checkpoints, the chief's broadcast, replica checks
  // and fingerprints cover all of them.
  std::vector<Variable*> weights() const;
  int64_t param_count() const;
  MultiWorkerMirroredStrategy* strategy() const { return strategy_; }
  KernelContext* kernel_context() { return kernels_.get(); }
  Optimizer* optimizer() { return optimizer_.get(); }
  // The compiled metrics (their names; values come back in Logs and results).
  const std::vector<Metric>& metrics() const { return metrics_; }

 protected:
  // The functional Model's way in: a layer whose inputs are activations (0: the
  // model's input; i + 1: the output of the i-th layer added), and the input
  // shape it was declared with. The last layer added gives the model's output.
  void AddNode(std::unique_ptr<Layer> layer, std::vector<int> inputs);
  void DeclareInput(Shape shape) { declared_input_ = std::move(shape); }
  void set_model_name(std::string name) { model_name_ = std::move(name); }
  // A problem found while the model was described (functional.h), reported by Compile.
  void set_definition_error(absl::Status error) { definition_error_ = std::move(error); }

 private:
  // True when every layer takes the previous one's output (a Sequential model).
  bool IsChain() const;
  // The names of what layer l reads ("input", "conv2d, dense").
  std::string InputNames(size_t l) const;
  absl::Status EnsureReady(const Shape& input_shape);
  absl::Status Forward(const Tensor& x, bool training);
  // Layer l's backward pass: its variables' gradients, and its inputs' where a
  // layer below learns (summed over the layers that read an activation).
  absl::Status BackwardLayer(size_t l);
  // This replica's [loss * n, n, then each metric's state] for the last forward.
  std::vector<double> BatchSums(const std::vector<int32_t>& labels, double loss);
  int64_t MetricStateSize() const;
  Logs LogsFrom(const std::vector<double>& sums) const;
  // After the callbacks' OnTrainEnd (`ended`: this worker's result), every worker
  // learns whether any failed or received SIGTERM; then OnTrainCommitted may run.
  absl::Status AgreeTrainingEnded(const absl::Status& ended);
  // What every worker's model must agree on, a line per item: variables, layers,
  // loss, optimizer, precision, metrics.
  std::vector<std::string> AgreementLines() const;
  void LogThreadChoice() const;
  // Sums every layer's BatchSums over the replicas (one all-reduce, only for
  // models with such layers). `had_batch`: whether this replica ran a forward
  // pass this step (else it adds zeros).
  absl::StatusOr<std::vector<double>> ReduceBatchState(bool had_batch);
  // Updates the layers' state (moving statistics) from those sums, and lets every
  // layer commit the step (Layer::CommitStep).
  void ApplyBatchState(const std::vector<double>& sums);
  // Every worker takes the chief's stop_training and learning rate.
  absl::Status AgreeOnDecisions();
  // What every worker of an elastic ring must fit alike. A worker that joins takes
  // the ring's (its root's) and is refused (FAILED_PRECONDITION, exit 7) if its
  // own differs; `decide_per_batch` it only takes.
  struct FitShape {
    int64_t steps = 0, epochs = 0, steps_per_pass = 0, examples_per_pass = 0;
    int64_t data_seed = 0, model = 0, replica_check_steps = 0;
    bool per_replica_batch = false;  // ElasticBatch::kPerReplica
    int64_t global_batch = 0;        // As fit was called (the cluster's).
    // Taken, not compared: a per-batch decider on any worker, and where this fit
    // began (an epoch's begin that runs again starts at its first step).
    bool decide_per_batch = false;
    int64_t start_epoch = 0, start_step_in_epoch = 0;
    // Taken, and kept current by fit as its operations complete: where the next
    // step's examples begin, the steps before the current epoch, and that epoch's
    // steps (with a per-replica batch they follow the ring's size).
    int64_t data_pass = 0, data_offset = 0, epoch_first_step = 0, epoch_steps = 0;
  };
  // Where fit's data starts (keras/sequential_elastic.cc): after `first_data_step`
  // steps, or where a checkpoint of a per-replica run recorded it (refused, exit
  // 7, by a run with a global batch, or outside the epoch); `*data` is re-sharded
  // in blocks of `global_batch` from there when that differs, or when a
  // per-replica fit starts on a ring smaller than the cluster.
  absl::StatusOr<DataPosition> StartDataOfFit(DistributedDataset* data, const TrainPosition& start,
                                              int64_t first_data_step, int64_t epoch_passes,
                                              bool per_replica, int64_t global_batch);
  // Elastic training (keras/sequential_elastic.cc): `failure` (IsPeerFailure) ended
  // a collective after this worker completed `*progress` of fit's operations (a
  // count that every worker advances alike). The survivors regroup (a minority,
  // or a failed regroup, returns its error), agree to go on at the furthest
  // progress any of them made (`*progress` becomes it; `*slowest` is the least),
  // and take that worker's training state and this epoch's loss and metric sums
  // (`epoch_sums`). The gradient reducer is a new one over the new ring.
  absl::Status SurvivePeerFailure(const absl::Status& failure, FitShape* shape, int64_t* progress,
                                  int64_t* slowest, std::vector<double>* epoch_sums);
  // Members, at a step boundary where the all-reduced count of workers waiting
  // to join was positive: the ring grows by them (MultiWorkerMirroredStrategy::
  // Grow), then goes on as after SurvivePeerFailure. A peer failure meanwhile
  // is returned (survive it).
  absl::Status LetJoinersIn(FitShape* shape, int64_t* progress, int64_t* slowest,
                            std::vector<double>* epoch_sums);
  // A worker that started while its job ran (strategy joining()): joins the ring
  // at its members' next step boundary and takes their state and progress.
  absl::Status JoinRunningJob(FitShape* shape, int64_t* progress, int64_t* slowest,
                              std::vector<double>* epoch_sums);
  // After the ring changed: a new gradient reducer; the furthest progress and the
  // state and epoch sums of the lowest rank that made it (SurvivePeerFailure). A
  // negative `*progress`: this worker joins (it made none).
  absl::Status AgreeAfterRegroup(FitShape* shape, int64_t* progress, int64_t* slowest,
                                 std::vector<double>* epoch_sums);

  std::vector<std::unique_ptr<Layer>> layers_;
  // Per layer, the activations it reads (0: the model's input, i + 1: layer i's
  // output); layers are in an order where inputs come first.
  std::vector<std::vector<int>> inputs_;
  std::optional<Shape> declared_input_;
  std::string model_name_ = "sequential";
  absl::Status definition_error_;
  std::map<std::string, int> type_counts_;  // For Keras-style layer names.
  MultiWorkerMirroredStrategy* strategy_ = nullptr;  // Not owned (or default_strategy_).
  std::unique_ptr<MultiWorkerMirroredStrategy> default_strategy_;
  bool compiled_ = false, built_ = false;
  CompileOptions compile_options_;
  Shape input_shape_;
  std::unique_ptr<KernelContext> kernels_;
  std::unique_ptr<Loss> loss_;
  std::unique_ptr<Optimizer> optimizer_;
  std::vector<Metric> metrics_;
  bool fused_softmax_ = false;
  std::unique_ptr<GradientReducer> reducer_;
  // Activations (acts_[0] is unused: the input) and their gradients.
  std::vector<Tensor> acts_, grads_;
  // Per layer (set in Build): whether the backward pass runs it (it or a layer
  // it reads from, directly or not, has variables). Nothing else needs gradients:
  // a model that opens with Flatten computes no input gradient for its first Dense.
  std::vector<bool> runs_backward_;
  std::vector<char> grad_set_;  // Per activation, during backward: a gradient arrived.
  std::vector<Tensor> grad_scratch_;  // Per input: a later gradient of an activation, before it is added.
  int64_t batch_sums_size_ = 0;  // Over every layer (set in Build).
  // Seconds blocked in collectives inside training steps (SyncBatchNormalization's
  // sums, the batch statistics), since Fit last took them for the step breakdown.
  // Shared with the sum the layers hold, which must not point at a movable model.
  std::shared_ptr<double> in_step_collective_s_ = std::make_shared<double>(0.0);
  const Tensor* input_ = nullptr;
  std::optional<TrainPosition> resume_;
  TrainingControls resume_controls_;
  std::vector<Callback*> fit_callbacks_;  // During Fit. Not owned.
  bool stop_training_ = false;
  bool layer_collectives_ = false;  // A layer sums over replicas (set in Build).
  int64_t steps_rerun_ = 0;
  // Elastic: the progress of a worker whose fit ended (beyond any operation of
  // fit): survivors still ending fit learn from it that training ended.
  static constexpr int64_t kFitEnded = int64_t{1} << 40;
  // The last fit's shape, once it ended on this worker (EvaluateAfterFit).
  std::optional<FitShape> ended_fit_;
  // Keys of fit's controls in checkpoints (SaveControls).
  static constexpr char kLearningRateControl[] = "optimizer/learning_rate";
  static constexpr char kStopTrainingControl[] = "fit/stop_training";
  TrainPosition fit_position_;
  int64_t fit_epoch_steps_ = 0, fit_global_batch_ = 0;
};

}  // namespace ringwork

#endif  // RINGWORK_KERAS_SEQUENTIAL_H_
