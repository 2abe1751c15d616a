// Model's training step: forward, loss, backward with the gradients handed to
// the reducer as they are ready, the optimizer, and the layers' batch state.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "keras/activation_function.h"
#include "keras/model.h"
#include "keras/shared_layer_call.h"
#include "observability/timeline.h"

namespace ringwork {

absl::Status Model::Forward(const Tensor& x, bool training) {
  input_ = &x;
  std::vector<const Tensor*> xs;
  for (size_t l = 0; l < layers_.size(); ++l) {
    TimelineSpan span("compute", "forward ", layers_[l]->name());
    xs.clear();
    for (int a : inputs_[l]) xs.push_back(a == 0 ? input_ : &acts_[a]);
    masks_.BeforeForward(l, *layers_[l]);
    if (layers_[l]->merges()) {
      RW_RETURN_IF_ERROR(
          static_cast<MergeLayer&>(*layers_[l]).ForwardMerge(*kernels_, xs, &acts_[l + 1]));
    } else {
      RW_RETURN_IF_ERROR(layers_[l]->Forward(*kernels_, *xs[0], &acts_[l + 1], training));
    }
    masks_.AfterForward(l, *layers_[l], xs);
  }
  return absl::OkStatus();
}

absl::Status Model::BackwardLayer(size_t l) {
  TimelineSpan span("compute", "backward ", layers_[l]->name());
  Layer& layer = *layers_[l];
  const std::vector<int>& inputs = inputs_[l];
  std::vector<const Tensor*> xs;
  std::vector<Tensor*> dxs;
  if (grad_scratch_.size() < inputs.size()) grad_scratch_.resize(inputs.size());
  // An activation read by several layers (a fan-out) gets the sum of their
  // gradients: the first writes it, later ones write a scratch that is added.
  std::vector<char> added(inputs.size(), 0);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int a = inputs[i];
    xs.push_back(a == 0 ? input_ : &acts_[a]);
    if (a == 0 || !runs_backward_[a - 1]) {
      dxs.push_back(nullptr);  // Nothing below learns.
    } else if (!grad_set_[a]) {
      dxs.push_back(&grads_[a]);
      grad_set_[a] = 1;
    } else {
      dxs.push_back(&grad_scratch_[i]);
      added[i] = 1;
    }
  }
  if (layer.merges()) {
    RW_RETURN_IF_ERROR(
        static_cast<MergeLayer&>(layer).BackwardMerge(*kernels_, xs, grads_[l + 1], dxs));
  } else {
    RW_RETURN_IF_ERROR(layer.Backward(*kernels_, *xs[0], acts_[l + 1], grads_[l + 1], dxs[0]));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!added[i]) continue;
    Tensor& sum = grads_[inputs[i]];
    const float* more = grad_scratch_[i].data();
    for (int64_t e = 0; e < sum.size(); ++e) sum.data()[e] += more[e];
  }
  return absl::OkStatus();
}

absl::StatusOr<float> Model::TrainStepWithoutBatch() {
  if (!built_) {
    return absl::FailedPreconditionError(
        "a training step with no examples on a model that is not built");
  }
  // No examples for this replica at this step (the short end of a pass): it
  // adds nothing to the average but takes part in every collective.
  reducer_->BeginStep(0.f);
  // Where the others' layers sum over replicas, this one adds zeros.
  for (size_t l = 0; l < layers_.size(); ++l) {
    RW_RETURN_IF_ERROR(layers_[l]->JoinWithoutBatch(true));
  }
  for (size_t l = layers_.size(); l-- > 0;) {
    if (runs_backward_[l]) RW_RETURN_IF_ERROR(layers_[l]->JoinWithoutBatch(false));
  }
  for (size_t l = layers_.size(); l-- > 0;) {
    for (Variable* v : layers_[l]->variables()) reducer_->Ready(v);
  }
  RW_RETURN_IF_ERROR(reducer_->FinishStep());
  RW_ASSIGN_OR_RETURN(std::vector<double> batch_state, ReduceBatchState(/*had_batch=*/false));
  AddRegularizationGradients();
  optimizer_->Apply(trainable_variables());
  ApplyBatchState(batch_state);
  return 0.f;
}

absl::StatusOr<float> Model::TrainStep(const struct Batch& batch, float weight) {
  if (batch.size() == 0) return TrainStepWithoutBatch();
  RW_RETURN_IF_ERROR(
      EnsureReady(Shape(batch.features.shape().begin() + 1, batch.features.shape().end())));
  reducer_->BeginStep(weight);
  absl::Status status = Forward(batch.features, /*training=*/true);
  TimelineSpan loss_span("compute", "loss");
  absl::StatusOr<float> loss =
      status.ok() ? ComputeLoss(batch, /*gradients=*/true) : absl::StatusOr<float>(status);
  loss_span.End();
  // The outputs' gradients came from the losses; a layer reading an output adds to it.
  std::fill(grad_set_.begin(), grad_set_.end(), 0);
  for (int a : outputs_) grad_set_[a] = 1;
  for (size_t l = layers_.size(); l-- > 0 && loss.ok();) {
    if (!runs_backward_[l]) continue;
    status = BackwardLayer(l);
    if (!status.ok()) loss = status;
    for (SharedLayerCall* call : shared_calls_[l]) call->AddGradientsToOwner();
    for (Variable* v : layers_[l]->variables()) reducer_->Ready(v);
  }
  if (!loss.ok()) {
    // Let the other replicas' collectives fail at once rather than time out.
    strategy_->communicator()->Barrier().IgnoreError();
    return loss.status();
  }
  RW_RETURN_IF_ERROR(reducer_->FinishStep());
  // Every collective of the step before the optimizer changes the model: a step
  // that fails in one changed nothing (elastic training runs it again).
  RW_ASSIGN_OR_RETURN(std::vector<double> batch_state, ReduceBatchState(/*had_batch=*/true));
  TimelineSpan optimizer_span("compute", "optimizer");
  AddRegularizationGradients();
  optimizer_->Apply(trainable_variables());
  optimizer_span.End();
  ApplyBatchState(batch_state);
  return loss;
}

absl::StatusOr<std::vector<double>> Model::ReduceBatchState(bool had_batch) {
  std::vector<double> sums(static_cast<size_t>(batch_sums_size_), 0.0);
  if (batch_sums_size_ == 0) return sums;
  int64_t at = 0;
  for (const auto& layer : layers_) {
    if (had_batch) layer->BatchSums(sums.data() + at);
    at += layer->batch_sums_size();
  }
  {
    TimelineSpan span("exposed communication", "batch statistics all-reduce");
    const auto start = std::chrono::steady_clock::now();
    RW_RETURN_IF_ERROR(strategy_->Reduce(ReduceOp::kSum, sums.data(), batch_sums_size_));
    *in_step_collective_s_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return sums;
}

void Model::ApplyBatchState(const std::vector<double>& sums) {
  int64_t at = 0;
  for (const auto& layer : layers_) {
    if (layer->batch_sums_size() > 0) layer->UpdateFromBatchSums(sums.data() + at);
    at += layer->batch_sums_size();
    layer->CommitStep();
  }
}

const struct Batch& Model::TargetsOf(const struct Batch& batch, size_t k,
                                     struct Batch* scratch) const {
  if (k == 0) return batch;
  const OutputTargets& more = batch.more_targets[k - 1];
  scratch->labels = more.labels;
  scratch->targets = more.targets;
  scratch->weights = batch.weights;
  return *scratch;
}

absl::StatusOr<float> Model::ComputeLoss(const struct Batch& batch, bool gradients) {
  if (batch.more_targets.size() + 1 != outputs_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the model has ", outputs_.size(), " outputs (", absl::StrJoin(output_names(), ", "),
        ") but the data has targets for ", batch.more_targets.size() + 1,
        " (data for several outputs: a pipeline with a target feature per output, "
        "keras/pipeline_batch.h)"));
  }
  double total = 0;
  struct Batch scratch;
  for (size_t k = 0; k < outputs_.size(); ++k) {
    const int a = outputs_[k];
    Tensor* gradient = gradients ? &grads_[a] : nullptr;
    absl::StatusOr<float> loss =
        losses_[k].Compute(acts_[a], TargetsOf(batch, k, &scratch), gradient);
    if (!loss.ok() && outputs_.size() > 1) {
      return absl::Status(loss.status().code(), absl::StrCat("output ", layers_[a - 1]->name(),
                                                             ": ", loss.status().message()));
    }
    RW_RETURN_IF_ERROR(loss.status());
    const float w = loss_weights_[k];
    if (gradient != nullptr && w != 1.f) {
      for (int64_t i = 0; i < gradient->size(); ++i) gradient->data()[i] *= w;
    }
    output_losses_[k] = *loss;
    total += static_cast<double>(w) * *loss;
    // A user's loss may take targets of another shape; the metrics that read
    // them output by output cannot.
    for (const Metric& m : metrics_) {
      RW_RETURN_IF_ERROR(m.CheckTargets(acts_[a], TargetsOf(batch, k, &scratch)));
    }
  }
  return static_cast<float>(total + RegularizationPenalty());
}

// Keras' regularization losses: l1 sum |w| + l2 sum w^2 of the trainable weights
// that have them (the same on every replica, whose weights are the same).
double Model::RegularizationPenalty() const {
  double penalty = 0;
  for (const Variable* v : trainable_variables()) {
    if (v->l1 == 0 && v->l2 == 0) continue;
    double l1 = 0, l2 = 0;
    for (int64_t i = 0; i < v->size(); ++i) {
      const double w = v->value.data()[i];
      l1 += std::fabs(w);
      l2 += w * w;
    }
    penalty += v->l1 * l1 + v->l2 * l2;
  }
  return penalty;
}

// The penalty's gradient joins the reduced gradient, on every replica alike.
void Model::AddRegularizationGradients() {
  for (Variable* v : trainable_variables()) {
    if (v->l1 == 0 && v->l2 == 0) continue;
    for (int64_t i = 0; i < v->size(); ++i) {
      const float w = v->value.data()[i];
      const float sign = w > 0 ? 1.f : (w < 0 ? -1.f : 0.f);
      v->grad[i] += v->l1 * sign + 2 * v->l2 * w;
    }
  }
}

int64_t Model::SumsSize() const {
  int64_t n = 2 + (outputs_.size() > 1 ? static_cast<int64_t>(outputs_.size()) : 0);
  for (const Metric& m : metrics_) n += m.state_size() * static_cast<int64_t>(outputs_.size());
  return n;
}

std::vector<double> Model::BatchSums(const struct Batch& batch, double loss) {
  std::vector<double> sums(static_cast<size_t>(SumsSize()), 0.0);
  const int64_t examples = batch.size();
  if (examples == 0) return sums;
  const double n = static_cast<double>(examples);
  sums[0] = loss * n;  // The batch's (weighted) mean loss times its examples.
  sums[1] = n;
  double* state = sums.data() + 2;
  if (outputs_.size() > 1) {
    for (float output_loss : output_losses_) *state++ = output_loss * n;
  }
  struct Batch scratch;
  Tensor probabilities;
  for (size_t k = 0; k < outputs_.size(); ++k) {
    const double value = outputs_.size() > 1 ? output_losses_[k] : loss;
    // Metrics see what the model outputs: a sigmoid fused into the loss is applied
    // for them (a softmax is not: the metrics that read it take logits too).
    const Tensor* output = &acts_[outputs_[k]];
    bool logits = losses_[k].from_logits();
    // Binary cross-entropy from logits: each output its own sigmoid, also for
    // the metrics that would otherwise take several outputs for a softmax.
    if (fused_[k] == kFusedSigmoid ||
        (logits && losses_[k].kind() == Loss::Kind::kBinaryCrossentropy)) {
      probabilities = *output;
      SigmoidInPlace(&probabilities);
      output = &probabilities;
      logits = false;
    }
    Tensor fused_softmax;  // What a user's metric reads: the model's probabilities.
    bool softmaxed = false;
    for (const Metric& m : metrics_) {
      if (m.kind() == Metric::Kind::kCustom && fused_[k] == kFusedSoftmax) {
        if (!softmaxed) {
          softmaxed = true;
          fused_softmax = *output;
          SoftmaxInPlace(&fused_softmax);
        }
        m.Accumulate(fused_softmax, TargetsOf(batch, k, &scratch), value, false, state);
        state += m.state_size();
        continue;
      }
      m.Accumulate(*output, TargetsOf(batch, k, &scratch), value, logits, state);
      state += m.state_size();
    }
  }
  return sums;
}

Logs Model::LogsFrom(const std::vector<double>& sums) const {
  Logs logs;
  logs["loss"] = sums[1] > 0 ? sums[0] / sums[1] : 0;
  const double* state = sums.data() + 2;
  const std::vector<std::string> names = output_names();
  const bool several = names.size() > 1;
  if (several) {
    for (const std::string& name : names) {
      logs[name + "_loss"] = sums[1] > 0 ? *state / sums[1] : 0;
      ++state;
    }
  }
  for (const std::string& name : names) {
    for (const Metric& m : metrics_) {
      logs[several ? name + "_" + m.name() : m.name()] = m.Result(state);
      state += m.state_size();
    }
  }
  return logs;
}

}  // namespace ringwork
