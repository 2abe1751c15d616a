// FitLoop over a streamed pipeline: the start (the features bound to the model,
// the distributed reader, epochs of unknown length), and the data part of a
// step for either kind of input.
#include "absl/strings/str_cat.h"
#include "base/cpu_cores.h"
#include "base/exit_code.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "keras/fit_loop.h"

namespace ringwork {

absl::StatusOr<History> FitLoop::Run(const Pipeline& train) {
  RW_RETURN_IF_ERROR(StartStream(train));
  return Train();
}

absl::StatusOr<History> FitLoop::Run(const DatasetFn& make_train) {
  MultiWorkerMirroredStrategy* strategy = model_->strategy_;
  if (strategy == nullptr) {
    return absl::FailedPreconditionError("call Compile before Fit/Evaluate/Predict");
  }
  InputContext context;
  context.num_input_pipelines = strategy->num_replicas_in_sync();
  context.input_pipeline_id = strategy->rank();
  context.num_replicas_in_sync = strategy->num_replicas_in_sync();
  context.global_batch = options_.batch_size > 0 ? options_.batch_size : 32;
  absl::StatusOr<Pipeline> train = make_train(context);
  if (!train.ok()) {
    // The others are about to agree on their data: they learn why at once.
    const absl::Status failed = WithContext(train.status(), "the dataset function: ");
    strategy->Abort(failed);
    return failed;
  }
  per_worker_ = true;
  RW_RETURN_IF_ERROR(StartStream(*train));
  return Train();
}

absl::Status FitLoop::StartStream(const Pipeline& train) {
  if (!model_->compiled_) {
    return absl::FailedPreconditionError("call Compile before Fit/Evaluate/Predict");
  }
  strategy_ = model_->strategy_;
  if (strategy_->elastic()) {
    // Survivors re-shard the stream from the step reached: one common order (DATA),
    // the same global batch.
    if (per_worker_ || strategy_->per_replica_batch() ||
        options_.shard_policy == AutoShardPolicy::kFile ||
        options_.shard_policy == AutoShardPolicy::kOff) {
      return absl::InvalidArgumentError(absl::StrCat(
          "elastic training (min_workers ", strategy_->options().min_workers,
          ") re-shards a streamed dataset by its position in one common order: it needs the "
          "DATA shard policy (AUTO picks it), a global batch (not elastic_batch per_replica) "
          "and one dataset for all (not a dataset function)"));
    }
    options_.shard_policy = AutoShardPolicy::kData;
  }
  DistributedPipelineOptions read;
  read.global_batch = options_.batch_size;
  read.default_batch = 32;  // Keras' default for unbatched data.
  read.policy = options_.shard_policy;
  read.prefetch_batches = DefaultPrefetchBatches(strategy_->cores_per_worker());
  read.ignore_errors = options_.ignore_errors;
  read.autotune_threads = strategy_->cores_per_worker();
  read.per_worker = per_worker_;
  RW_ASSIGN_OR_RETURN(stream_, DistributedPipeline::Create(strategy_, train, read));
  RW_ASSIGN_OR_RETURN(binding_,
                      BindPipeline(stream_->element_spec(), options_.binding, model_->signature()));
  RW_RETURN_IF_ERROR(model_->EnsureReady(binding_.input_shape));
  options_.batch_size = stream_->global_batch();
  options_.shard_policy = stream_->policy();
  // Keras' steps_per_epoch: epochs of that many steps from one stream that goes on
  // across them (a Repeat()ed pipeline goes on forever); else an epoch is a pass.
  const int64_t per_epoch = options_.steps_per_epoch;
  steps_ = per_epoch > 0 ? per_epoch : kUnknownSteps;
  epoch_passes_ = per_epoch > 0 ? 0 : 1;
  configured_workers_ = strategy_->cluster().configured_world_size();
  replica_batch_ = options_.batch_size / configured_workers_;
  SortCallbacks();
  FitAgreement agreement{steps_, options_.epochs, options_.replica_check_steps,
                         false,  decides_here_,   strategy_->ElasticSettings()};
  RW_RETURN_IF_ERROR(AgreeOnFit(strategy_, &agreement));
  RW_RETURN_IF_ERROR(BeginTraining(agreement.decide_per_batch));
  // The numbering of an epoch's operations holds any number of steps.
  ops_.max_epoch_steps = kUnknownSteps;
  epoch_sums_.assign(static_cast<size_t>(model_->SumsSize()), 0.0);
  FitShape shape;
  shape.steps = steps_;
  shape.epochs = options_.epochs;
  shape.replica_check_steps = options_.replica_check_steps;
  shape.global_batch = options_.batch_size;
  shape.decide_per_batch = decide_per_batch_;
  shape.start_epoch = start_.epoch;
  shape.start_step_in_epoch = start_.step_in_epoch;
  shape.epoch_first_step = start_.step - start_.step_in_epoch;
  shape.epoch_steps = steps_;
  shape.elastic_settings = strategy_->ElasticSettingsHash();
  ElasticReplica* replica = model_;
  run_.emplace(strategy_, replica, shape, ops_.Begin(start_.epoch));
  // A resumed epoch: this worker's batches before it are read again and dropped
  // (with steps_per_epoch, every step of the run so far: one pass goes on).
  RW_RETURN_IF_ERROR(
      per_epoch > 0
          ? stream_->StartPass(0, start_.epoch * per_epoch + start_.step_in_epoch,
                               input_report_.StartPass())
          : stream_->StartPass(start_.epoch, start_.step_in_epoch, input_report_.StartPass()));
  if (model_->reducer_ != nullptr) model_->reducer_->TakeTiming();  // Counts from this fit on.
  *model_->in_step_collective_s_ = 0;
  NotePosition(start_.epoch, start_.step_in_epoch);
  return absl::OkStatus();
}

absl::StatusOr<bool> FitLoop::NextBatch(int64_t epoch, int64_t step, double* weight) {
  const std::string at_step = AtStep(epoch, step);
  if (stream_ == nullptr) {
    if (!it_->Next(&batch_)) {
      return WithContext(it_->status().ok()
                             ? absl::InternalError("the input ended before the agreed steps")
                             : it_->status(),
                         at_step);
    }
    *weight = it_->gradient_weight();
    ApplyClassWeights();
    return true;
  }
  absl::StatusOr<bool> more = stream_->NextStep(&stream_batch_, weight);
  if (!more.ok()) return WithContext(more.status(), at_step);
  if (!*more) return false;
  absl::Status converted = ToModelBatch(stream_batch_, stream_->element_spec(), binding_, &batch_);
  if (!converted.ok()) {
    // A target this worker cannot train on: every worker stops with the cause.
    const absl::Status cause =
        InvalidDataError(absl::StrCat(OriginOf(stream_batch_), converted.message()));
    strategy_->Abort(cause);
    return WithContext(cause, at_step);
  }
  ApplyClassWeights();
  return true;
}

void FitLoop::ApplyClassWeights() {
  if (options_.class_weight.empty() || batch_.labels.empty()) return;
  const size_t n = batch_.labels.size();
  if (batch_.weights.empty()) batch_.weights.assign(n, 1.f);
  for (size_t i = 0; i < n; ++i) {
    const auto it = options_.class_weight.find(batch_.labels[i]);
    if (it != options_.class_weight.end()) batch_.weights[i] *= it->second;
  }
}

}  // namespace ringwork
