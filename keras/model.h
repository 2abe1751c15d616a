// A Keras-like Model: a graph of layers, compiled with a loss, an optimizer and
// metrics, trained with Fit(), measured with Evaluate(), used with Predict().
// Built inside a MultiWorkerMirroredStrategy scope it trains on every worker of
// the cluster in lock step; otherwise it trains alone.
//
//   RW_ASSIGN_OR_RETURN(std::unique_ptr<MultiWorkerMirroredStrategy> strategy,
//                       MultiWorkerMirroredStrategy::Create());    // TF_CONFIG
//   auto scope = strategy->scope();
//   SymbolicTensor x = Input({28, 28, 1});
//   SymbolicTensor y = Apply(Dense(10), Apply(Flatten(), x));
//   Model model(x, y);                       // or Sequential (keras/sequential.h)
//   RW_RETURN_IF_ERROR(model.Compile({.loss = {"sparse_categorical_crossentropy", true},
//                                     .optimizer = {.name = "adam"}}));
//   absl::StatusOr<History> history = model.Fit(train, {.epochs = 5, .batch_size = 256});
//   absl::StatusOr<EvaluateResult> test = model.Evaluate(test_set);
//
// Fit()'s batch_size is the global batch: each of the N replicas takes batch / N
// examples per step of its shard of the data; losses and metrics are reported over
// all replicas, so every worker returns the same numbers. The graph is described
// with the functional API (keras/functional.h) or by Sequential's Add(); the
// model owns the layers and their topological order.
//
// Options structs: fill them field by field, or with designated initializers in
// the order their fields are declared here (a field left out keeps its default).
//
// Threads: one thread uses a model (the gradient reducer may run a thread of its
// own during a training step).
#ifndef RINGWORK_KERAS_MODEL_H_
#define RINGWORK_KERAS_MODEL_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/dataset.h"
#include "data/pipeline/pipeline.h"
#include "keras/callbacks.h"
#include "keras/functional.h"
#include "keras/layer.h"
#include "keras/layers.h"
#include "keras/losses.h"
#include "keras/metrics.h"
#include "keras/optimizers.h"
#include "keras/pipeline_batch.h"
#include "keras/sequence_masks.h"
#include "kernels/kernel_context.h"
#include "strategy/distributed_pipeline.h"
#include "strategy/elastic_run.h"
#include "strategy/gradient_reducer.h"
#include "strategy/multi_worker_mirrored_strategy.h"

namespace ringwork {

struct CompileOptions {
  LossSpec loss;  // Every output's, unless `losses` names it.
  // A model of several outputs: an output's loss by its name (its layer's), and
  // Keras' loss_weights: the loss trained is the sum of each output's loss times
  // its weight (1 for an output not named).
  std::map<std::string, LossSpec> losses;
  std::map<std::string, float> loss_weights;
  OptimizerSpec optimizer;
  // By name (keras/metrics.h), each output's. "auto": accuracy where every
  // output's loss classifies (the cross-entropies), none where a loss measures
  // numbers (mse, mae, huber) or is the user's; {} for none. Compile writes the
  // names it chose back into compile_options().
  std::vector<std::string> metrics = {"auto"};
  Precision precision = Precision::kFloat32;
  // Intra-op threads (TensorFlow's intra_op_parallelism_threads); 0: this
  // process's cores divided by the workers on this host.
  int intra_op_threads = 0;
  uint64_t seed = 42;  // Initialisation, shuffling and dropout.
  // A model created outside any strategy.scope() trains on this process alone.
  // Where this task is one of a cluster's workers (TF_CONFIG, Slurm, or the
  // cluster the process resolved with its flags), that is almost always a
  // mistake: every worker would train a model of its own. So Fit fails
  // (INVALID_ARGUMENT, exit 2) unless this says it is meant. Compile, Evaluate
  // and Predict on such a model are fine (a per-process scorer, LoadModel).
  bool train_alone = false;
};

struct FitOptions {
  int64_t epochs = 1;
  // Global: over all replicas. 0: a pipeline's own batch (its last Batch), else 32.
  int64_t batch_size = 0;
  const Dataset* validation_data = nullptr;       // Evaluated after every epoch.
  const Pipeline* validation_pipeline = nullptr;  // The same, streamed.
  DataBinding binding;                            // For pipelines.
  // Keras' class_weight: each example's weight (its sample weight, or 1) times its
  // class's (1 for a class not named).
  std::map<int32_t, float> class_weight;
  // Records a reader cannot read or parse are skipped and counted (tf.data's
  // ignore_errors), not an error.
  bool ignore_errors = false;
  int verbose = 1;  // 1: progress bar on the chief; 0: silent.
  std::vector<Callback*> callbacks;
  // kAuto: DATA for in-memory data; for a pipeline FILE when it has at least as
  // many files as workers, else DATA.
  AutoShardPolicy shard_policy = AutoShardPolicy::kAuto;
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
  double loss = 0;  // Several outputs: the weighted sum (each in metrics, "NAME_loss").
  std::map<std::string, double> metrics;
  int64_t examples = 0;  // Over all replicas.
};

class FitLoop;
class SharedLayerCall;  // keras/shared_layer_call.h
struct KerasGraph;      // keras/keras_graph.h
inline constexpr char kPredictOnNoExamples[] = "predict on no examples";

class Model : private ElasticReplica {
 public:
  // The layers from `inputs` to `outputs`, taken from the graph (layers that do
  // not lead to `outputs` are dropped; keras/functional.cc). Uses the strategy of
  // the current scope, if any.
  Model(const SymbolicTensor& inputs, const SymbolicTensor& outputs);
  Model(const std::vector<SymbolicTensor>& inputs, const SymbolicTensor& outputs);
  // Several outputs: each learns its own targets with its own loss; logs and
  // results name each output's loss and metrics "NAME_loss", "NAME_accuracy".
  Model(const std::vector<SymbolicTensor>& inputs, const std::vector<SymbolicTensor>& outputs);
  ~Model() override;
  Model(Model&&) noexcept;  // Everything it owns is held by pointer.
  Model& operator=(Model&&) noexcept;

  // Creates the variables for inputs of `input_shape` (no batch dimension) and
  // makes them equal on every replica (the chief's values). Fit/Evaluate/Predict
  // build on first use.
  absl::Status Build(const Shape& input_shape);
  absl::Status Compile(const CompileOptions& options);

  absl::StatusOr<History> Fit(const Dataset& train, const FitOptions& options);
  // A streamed dataset (data/pipeline/pipeline.h): each epoch one pass, read in
  // bounded memory (strategy/distributed_pipeline.h).
  absl::StatusOr<History> Fit(const Pipeline& train, const FitOptions& options);
  // tf.distribute's distribute_datasets_from_function: every worker calls
  // `make_train` with its InputContext and trains on what it returns, its own
  // share (shard and batch it by the context; an unbatched one is batched by
  // PerReplicaBatch()). The global batch is the sum of the workers' batches.
  absl::StatusOr<History> Fit(const DatasetFn& make_train, const FitOptions& options);
  absl::StatusOr<EvaluateResult> Evaluate(const Dataset& data, int64_t batch_size = 256);
  absl::StatusOr<EvaluateResult> Evaluate(const Pipeline& data, const DataBinding& binding = {},
                                          int64_t batch_size = 256);
  // Evaluate once fit ended on every worker: with elastic training a peer's failure
  // in it regroups the workers still running (replicas are identical after fit)
  // and they evaluate again (up to 3 times); otherwise as Evaluate.
  absl::StatusOr<EvaluateResult> EvaluateAfterFit(const Dataset& data, int64_t batch_size = 256);
  absl::StatusOr<EvaluateResult> EvaluateAfterFit(const Pipeline& data,
                                                  const DataBinding& binding = {},
                                                  int64_t batch_size = 256);
  // Outputs for `x` [count, ...] (probabilities when the model ends in a softmax;
  // several inputs side by side). A model of several outputs: PredictOutputs.
  // No examples: INVALID_ARGUMENT with the message kPredictOnNoExamples.
  absl::StatusOr<Tensor> Predict(const Tensor& x, int64_t batch_size = 256);
  // Every element of `data`, in order, on this worker alone (no collective: the
  // replicas are identical), batched by batch_size unless it is batched already;
  // the inputs are binding.features (or bound as Fit binds them, by name, or the
  // pipeline's only feature).
  absl::StatusOr<Tensor> Predict(const Pipeline& data, const DataBinding& binding = {},
                                 int64_t batch_size = 256);
  // Every output's predictions, in the order of the model's outputs.
  absl::StatusOr<std::vector<Tensor>> PredictOutputs(const Tensor& x, int64_t batch_size = 256);
  absl::StatusOr<std::vector<Tensor>> PredictOutputs(const Pipeline& data,
                                                     const DataBinding& binding = {},
                                                     int64_t batch_size = 256);
  std::string Summary() const;

  // Keras' save_weights: every weight (Keras' model.weights) under its Keras name
  // ("dense/kernel"), float32, in Keras' layout, to PATH ending in .npz (NumPy's
  // np.load) or .safetensors (checkpoint/weights_file.h), or in Keras 3's
  // .weights.h5 layout (keras/keras_archive.h). The chief writes (atomically);
  // every worker returns its result. The model must be built.
  absl::Status SaveWeights(const std::string& path);
  // Keras' load_weights from .npz, .safetensors, a TF.js model.json, Keras 3's
  // .weights.h5 or .keras archive, or a Ringwork checkpoint (a file, or
  // a ModelCheckpoint/BackupAndRestore directory: its latest): read on
  // the chief, every name and shape checked before anything changes, then given to
  // every replica. FAILED_PRECONDITION (exit 7) naming the tensor for one the file
  // lacks, of another shape (both shapes), or that the model lacks; DATA_LOSS
  // (exit 5) for a corrupt file. Collective; the model must be built.
  absl::Status LoadWeights(const std::string& path);
  // The inputs' names and shapes and the outputs' names (the layers that give
  // them), as pipelines bind to them.
  ModelSignature signature() const;
  std::vector<std::string> output_names() const;
  // Each output's shape, without the batch (the model must be built).
  std::vector<Shape> OutputShapes() const;
  // The activation output `k` ends in ("softmax", "linear", ...), looking through
  // Dropout, Flatten, Reshape and RandomFlip.
  std::string output_activation(size_t k = 0) const;

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
  // Every weight: trainable and non-trainable (moving statistics, frozen
  // layers'), layer by layer (Keras' model.weights and model.variables).
  // Checkpoints, the chief's broadcast, replica checks and fingerprints cover all
  // of them.
  std::vector<Variable*> weights() const;
  std::vector<Variable*> variables() const { return weights(); }
  // What training changes (Keras' trainable_variables): gradients, the
  // all-reduce, the optimizer. A frozen layer's weights are not among them.
  std::vector<Variable*> trainable_variables() const;
  // The others (Keras' non_trainable_variables), layer by layer.
  std::vector<Variable*> non_trainable_variables() const;
  int64_t param_count() const;
  MultiWorkerMirroredStrategy* strategy() const { return strategy_; }
  const CompileOptions& compile_options() const { return compile_options_; }
  KernelContext* kernel_context() { return kernels_.get(); }
  Optimizer* optimizer() { return optimizer_.get(); }
  // The compiled metrics (their names; values come back in Logs and results).
  const std::vector<Metric>& metrics() const { return metrics_; }

 protected:
  // An empty graph (Sequential adds to it). Uses the strategy of the current scope.
  Model();
  // A layer whose inputs are activations (0: the model's input; i + 1: the output
  // of the i-th layer added). The last layer added gives the model's output.
  void AddNode(std::unique_ptr<Layer> layer, std::vector<int> inputs);
  size_t layer_count() const { return layers_.size(); }
  void set_model_name(std::string name) { model_name_ = std::move(name); }

 private:
  friend class FitLoop;
  friend absl::StatusOr<std::string> OnnxModelBytes(const Model& model);
  friend absl::StatusOr<KerasGraph> KerasGraphOf(const Model& model, const std::string& what);

  // The functional constructor's work (keras/functional.cc): the graph's layers
  // in topological order; several inputs read one flat example.
  absl::Status TakeLayers(const std::vector<SymbolicTensor>& inputs,
                          const std::vector<SymbolicTensor>& outputs);
  void DeclareInput(Shape shape) { declared_input_ = std::move(shape); }

  // For a model created outside any scope: INVALID_ARGUMENT where this task is
  // one of a cluster's workers (ThisProcessCluster(), else TF_CONFIG or Slurm).
  static absl::Status RefuseTrainingAloneInCluster();
  // True when every layer takes the previous one's output (a Sequential model).
  bool IsChain() const;
  // The names of what layer l reads ("input", "conv2d, dense").
  std::string InputNames(size_t l) const;
  absl::Status EnsureReady(const Shape& input_shape);
  absl::Status PrepareGradients();
  absl::Status CheckFitOptions(const FitOptions& options) const;
  absl::Status Forward(const Tensor& x, bool training);
  // Forward in inference on one chunk of examples: the model's outputs (a final
  // softmax applied where training fused it into the loss), valid until the next
  // forward pass.
  absl::StatusOr<std::vector<const Tensor*>> PredictChunk(const Tensor& chunk);
  // After Forward: the batch's loss (the weighted sum over the outputs; each
  // output's kept in output_losses_), and d(loss)/d(output) into the outputs'
  // gradients when `gradients`.
  absl::StatusOr<float> ComputeLoss(const struct Batch& batch, bool gradients);
  // The targets of output k of `batch` (k > 0: from more_targets, copied into `scratch`).
  const struct Batch& TargetsOf(const struct Batch& batch, size_t k, struct Batch* scratch) const;
  // Each output's shape (no batch dimension), once built.
  // How many examples Predict runs through the layers at once, at most.
  int64_t PredictTile() const;
  // Size of BatchSums: loss, examples, each output's loss (several), metric states.
  int64_t SumsSize() const;
  double RegularizationPenalty() const;
  void AddRegularizationGradients();
  // Layer l's backward pass: its variables' gradients, and its inputs' where a
  // layer below learns (summed over the layers that read an activation).
  absl::Status BackwardLayer(size_t l);
  // A step for a replica without examples: it takes part in every collective.
  absl::StatusOr<float> TrainStepWithoutBatch();
  // This replica's [loss * n, n, then each metric's state] for the last forward.
  std::vector<double> BatchSums(const struct Batch& batch, double loss);
  Logs LogsFrom(const std::vector<double>& sums) const;
  // `evaluate` once fit ended; with elastic training, again after a peer's failure
  // in it (EvaluateAfterFit).
  absl::StatusOr<EvaluateResult> EvaluateSurvivingPeers(
      const std::function<absl::StatusOr<EvaluateResult>()>& evaluate);
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

  // ElasticReplica: the ring changes under the model (strategy/elastic_run.h).
  void LeaveRing() override;
  void EnterRing() override;
  absl::Status AdoptStateOf(int root) override;

  std::vector<std::unique_ptr<Layer>> layers_;
  // Per layer, the activations it reads (0: the model's input, i + 1: layer i's
  // output); layers are in an order where inputs come first.
  std::vector<std::vector<int>> inputs_;
  SequenceMasks masks_;  // Which activations carry a mask over steps (set in Build).
  std::optional<Shape> declared_input_;
  std::string model_name_ = "model";
  // A problem found while the model was described (functional.cc), reported by Compile.
  absl::Status definition_error_;
  std::map<std::string, int> type_counts_;           // For Keras-style layer names.
  MultiWorkerMirroredStrategy* strategy_ = nullptr;  // Not owned (or default_strategy_).
  bool created_outside_scope_ = false;               // No strategy when it was created.
  std::unique_ptr<MultiWorkerMirroredStrategy> default_strategy_;
  bool compiled_ = false, built_ = false;
  std::vector<std::vector<float>> frozen_grads_;  // Frozen variables' gradient slots.
  CompileOptions compile_options_;
  Shape input_shape_;
  std::unique_ptr<KernelContext> kernels_;
  // Per output (outputs_: the activations the model gives, in their order): its
  // loss, weight, which final activation went into the loss (kFused*), and its
  // last loss.
  std::vector<int> outputs_;
  std::vector<Loss> losses_;
  std::vector<float> loss_weights_;
  static constexpr char kFusedNone = 0, kFusedSoftmax = 1, kFusedSigmoid = 2;
  std::vector<char> fused_;
  // Whether output k's final activation `activation` goes into `loss`.
  static char FusionFor(const std::string& activation, const Loss& loss, size_t output_rank);
  std::vector<float> output_losses_;
  // Functional models' inputs, by name (Input()'s, else input_layer, input_layer_1, ...).
  std::vector<std::string> input_names_;
  std::vector<Shape> input_shapes_;
  std::unique_ptr<Optimizer> optimizer_;
  std::vector<Metric> metrics_;  // Each output's, when there are several.
  std::unique_ptr<GradientReducer> reducer_;
  // Activations (acts_[0] is unused: the input) and their gradients.
  std::vector<Tensor> acts_, grads_;
  // Per layer (set in Build): whether the backward pass runs it (it or a layer
  // it reads from, directly or not, has variables). Nothing else needs gradients:
  // a model that opens with Flatten computes no input gradient for its first Dense.
  std::vector<bool> runs_backward_;
  // Per layer (set in Build): the later calls of it, where it is shared
  // (keras/shared_layer_call.h).
  std::vector<std::vector<SharedLayerCall*>> shared_calls_;
  std::vector<char> grad_set_;  // Per activation, during backward: a gradient arrived.
  // Per input: a later gradient of an activation, before it is added.
  std::vector<Tensor> grad_scratch_;
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
  // The last fit's shape, once it ended on this worker (EvaluateAfterFit).
  std::optional<FitShape> ended_fit_;
  // Keys of fit's controls in checkpoints (SaveControls).
  static constexpr char kLearningRateControl[] = "optimizer/learning_rate";
  static constexpr char kStopTrainingControl[] = "fit/stop_training";
  TrainPosition fit_position_;
  int64_t fit_epoch_steps_ = 0, fit_global_batch_ = 0;
};

}  // namespace ringwork

#endif  // RINGWORK_KERAS_MODEL_H_
