#include "keras/sequential.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_format.h"
#include "base/cpu_cores.h"
#include "base/exit_code.h"
#include "base/logging.h"
#include "base/shortest_decimal.h"
#include "base/status_macros.h"
#include "observability/timeline.h"
#include "kernels/softmax.h"
#include "strategy/replica_check.h"

namespace ringwork {
namespace {

// "Dense" -> "dense", "MaxPooling2D" -> "max_pooling2d", as Keras names layers.
std::string SnakeCase(const std::string& type) {
  std::string out;
  for (size_t i = 0; i < type.size(); ++i) {
    const char c = type[i];
    if (std::isupper(static_cast<unsigned char>(c)) && i > 0 &&
        std::islower(static_cast<unsigned char>(type[i - 1]))) {
      out += '_';
    }
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

std::string WithCommas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

Sequential::Sequential() : strategy_(MultiWorkerMirroredStrategy::Current()) {}

Sequential::Sequential(std::vector<std::unique_ptr<Layer>> layers) : Sequential() {
  for (auto& layer : layers) Add(std::move(layer));
}

Sequential::~Sequential() = default;
Sequential::Sequential(Sequential&&) noexcept = default;
Sequential& Sequential::operator=(Sequential&&) noexcept = default;

void Sequential::Add(std::unique_ptr<Layer> layer) {
  AddNode(std::move(layer), {static_cast<int>(layers_.size())});
}

void Sequential::AddNode(std::unique_ptr<Layer> layer, std::vector<int> inputs) {
  const std::string base = SnakeCase(layer->type());
  const int n = type_counts_[base]++;
  if (layer->name().empty()) layer->set_name(n == 0 ? base : absl::StrCat(base, "_", n));
  layers_.push_back(std::move(layer));
  inputs_.push_back(std::move(inputs));
}

bool Sequential::IsChain() const {
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (inputs_[l] != std::vector<int>{static_cast<int>(l)}) return false;
  }
  return true;
}

std::vector<Variable*> Sequential::weights() const {
  std::vector<Variable*> all;
  for (const auto& layer : layers_) {
    for (Variable* v : layer->weights()) all.push_back(v);
  }
  return all;
}

std::vector<Variable*> Sequential::variables() const {
  std::vector<Variable*> all;
  for (const auto& layer : layers_) {
    for (Variable* v : layer->variables()) all.push_back(v);
  }
  return all;
}

int64_t Sequential::param_count() const {
  int64_t n = 0;
  for (const auto& layer : layers_) n += layer->param_count();
  return n;
}

absl::Status Sequential::Compile(const CompileOptions& options) {
  RW_RETURN_IF_ERROR(definition_error_);
  if (layers_.empty()) return absl::InvalidArgumentError("the model has no layers");
  compile_options_ = options;
  RW_ASSIGN_OR_RETURN(Loss loss, Loss::Create(options.loss));
  loss_ = std::make_unique<Loss>(loss);
  RW_ASSIGN_OR_RETURN(optimizer_, MakeOptimizer(options.optimizer));
  metrics_.clear();
  for (const std::string& name : options.metrics) {
    RW_ASSIGN_OR_RETURN(Metric metric, Metric::Create(name));
    metrics_.push_back(metric);
  }
  if (strategy_ == nullptr) {
    // Outside any scope: train alone, as TensorFlow's default strategy does.
    StrategyOptions local;
    RW_ASSIGN_OR_RETURN(default_strategy_, MultiWorkerMirroredStrategy::Create(
                                               ClusterConfig::Local("local (no strategy)"), local));
    strategy_ = default_strategy_.get();
  }
  kernels_ = std::make_unique<KernelContext>(
      KernelOptions{options.intra_op_threads, options.precision},
      strategy_->workers_on_this_host());
  compiled_ = true;
  return absl::OkStatus();
}

absl::Status Sequential::Build(const Shape& input_shape) {
  if (built_) {
    if (input_shape != input_shape_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the model was built for inputs of shape ", ShapeString(input_shape_), ", got ",
          ShapeString(input_shape)));
    }
    return absl::OkStatus();
  }
  if (!compiled_) return absl::FailedPreconditionError("call Compile before Build");
  if (declared_input_.has_value() && *declared_input_ != input_shape) {
    return absl::InvalidArgumentError(absl::StrCat("the model's inputs take examples of shape ",
                                                   ShapeString(*declared_input_),
                                                   ", but the data's examples have shape ",
                                                   ShapeString(input_shape)));
  }
  input_shape_ = input_shape;
  std::vector<Shape> shapes = {input_shape};  // Per activation.
  BuildContext ctx{compile_options_.seed};
  // The strategy, not this model (which may be moved after Build).
  ctx.sum_over_replicas = [strategy = strategy_, seconds = in_step_collective_s_](double* data, int64_t count) {
    TimelineSpan span("exposed communication", "layer sums all-reduce");
    const auto start = std::chrono::steady_clock::now();
    absl::Status status = strategy->Reduce(ReduceOp::kSum, data, count);
    *seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return status;
  };
  for (size_t l = 0; l < layers_.size(); ++l) {
    Layer& layer = *layers_[l];
    std::vector<Shape> in;
    for (int a : inputs_[l]) in.push_back(shapes[a]);
    absl::StatusOr<Shape> out = layer.merges() ? static_cast<MergeLayer&>(layer).BuildMerge(in)
                                               : layer.Build(in[0], ctx);
    if (!out.ok()) {
      std::vector<std::string> text;
      for (const Shape& s : in) text.push_back(ShapeString(s));
      return absl::Status(out.status().code(),
                          absl::StrCat("building layer ", layer.name(), " for input",
                                       in.size() > 1 ? "s " : " ", absl::StrJoin(text, " and "), ": ",
                                       out.status().message()));
    }
    layer.set_replica(strategy_->rank());
    shapes.push_back(*out);
  }
  // A softmax at the end goes into the loss: the same math, stabler and cheaper.
  if (loss_->kind() == Loss::Kind::kSparseCategoricalCrossentropy && !loss_->from_logits()) {
    if (auto* out = dynamic_cast<SoftmaxOutput*>(layers_.back().get())) {
      if (out->OutputLogits(true)) {
        fused_softmax_ = true;
        loss_->set_fused_softmax();
      }
    }
  }
  for (const Metric& m : metrics_) {
    const Shape& out = shapes.back();
    RW_RETURN_IF_ERROR(m.CheckOutputWidth(out.empty() ? 1 : NumElements(out)));
  }
  const std::vector<Variable*> vars = variables();
  // Before anything is exchanged: a different model would otherwise fail later
  // with a less helpful collective mismatch, or train on garbage.
  RW_RETURN_IF_ERROR(strategy_->CheckSameOnEveryWorker("model", AgreementLines()));
  // A layer that sums over replicas inside its backward pass needs the
  // communicator then: gradients are reduced after the backward pass.
  layer_collectives_ = std::any_of(layers_.begin(), layers_.end(),
                                   [](const auto& layer) { return layer->sums_over_replicas(); });
  reducer_ = strategy_->MakeGradientReducer(vars, /*allow_overlap=*/!layer_collectives_);  // Sets every gradient slot.
  RW_RETURN_IF_ERROR(strategy_->BroadcastVariables(weights()));
  batch_sums_size_ = 0;
  for (const auto& layer : layers_) batch_sums_size_ += layer->batch_sums_size();
  acts_.assign(layers_.size() + 1, Tensor());
  grads_.assign(layers_.size() + 1, Tensor());
  grad_set_.assign(layers_.size() + 1, 0);
  // Below the layers with variables no gradient is needed: a model that opens
  // with Flatten would otherwise compute its first Dense layer's input gradient
  // (the largest matmul of an MLP's step) for nothing.
  runs_backward_.assign(layers_.size(), false);
  for (size_t l = 0; l < layers_.size(); ++l) {
    bool runs = !layers_[l]->variables().empty();
    for (int a : inputs_[l]) runs = runs || (a > 0 && runs_backward_[a - 1]);
    runs_backward_[l] = runs;
  }
  built_ = true;
  LogThreadChoice();
  RW_VLOG(1) << "model built: " << param_count() << " parameters; gradients in "
             << reducer_->DebugString();
  return absl::OkStatus();
}

void Sequential::LogThreadChoice() const {
  // Once per process: the defaults depend on the host, so say what they chose.
  static std::atomic<bool> logged{false};
  if (logged.exchange(true)) return;
  const int workers = strategy_->workers_on_this_host();
  std::string reduction = "; no gradient all-reduce (one worker)";
  if (strategy_->num_replicas_in_sync() > 1) {
    reduction = absl::StrCat("; gradient all-reduce ",
                             reducer_->overlaps() ? "on a second thread during the backward pass"
                                                  : "after the backward pass, on the training thread",
                             " (--inter_op_threads=", strategy_->inter_op_threads(),
                             reducer_->overlaps() || strategy_->inter_op_threads() < 2
                                 ? ""
                                 : "; not with layers that sum over replicas in the backward pass",
                             ")");
  }
  RW_LOG(INFO) << "threads: " << kernels_->threads() << " per kernel (--intra_op_threads; "
               << AvailableCores() << " cores for " << workers << " worker" << (workers == 1 ? "" : "s")
               << " on this host)" << reduction << "; input "
               << (DefaultPrefetchBatches(strategy_->cores_per_worker()) > 0
                       ? "prefetched on a thread"
                       : "gathered on the training thread (one core per worker)");
}

void Sequential::SetTrainingStep(int64_t step) {
  for (auto& layer : layers_) layer->set_training_step(step);
}

std::vector<std::string> Sequential::AgreementLines() const {
  std::vector<std::string> lines;
  lines.push_back(absl::StrCat("input: ", ShapeString(input_shape_)));
  for (const Variable* v : variables()) {
    lines.push_back(absl::StrCat("variable ", v->name, ": float32 ", ShapeString(v->value.shape())));
  }
  for (const auto& layer : layers_) {
    for (const Variable* v : layer->non_trainable_variables()) {
      lines.push_back(absl::StrCat("non-trainable variable ", v->name, ": float32 ",
                                   ShapeString(v->value.shape())));
    }
  }
  const bool chain = IsChain();
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Layer& layer = *layers_[l];
    std::string line = absl::StrCat("layer ", layer.name(), ": ", layer.type(), ", output ",
                                    ShapeString(layer.output_shape()));
    if (!layer.activation_name().empty()) absl::StrAppend(&line, ", ", layer.activation_name());
    if (!layer.config().empty()) absl::StrAppend(&line, ", ", layer.config());
    if (!chain) absl::StrAppend(&line, ", from ", InputNames(l));
    lines.push_back(std::move(line));
  }
  const LossSpec& loss = compile_options_.loss;
  lines.push_back(absl::StrCat("loss: ", loss.name, loss.from_logits ? " from logits" : ""));
  const OptimizerSpec& o = compile_options_.optimizer;
  // Numbers exactly, in the fewest digits that give back the same float, so that
  // learning rates differing after the 6th digit do not pass as equal.
  auto exact = [](float x) { return ShortestDecimal(x); };
  lines.push_back(absl::StrCat("optimizer: ", o.name, ", learning_rate ", exact(o.learning_rate),
                               ", momentum ", exact(o.momentum), ", nesterov ", o.nesterov,
                               ", beta_1 ", exact(o.beta_1), ", beta_2 ", exact(o.beta_2),
                               ", epsilon ", exact(o.epsilon), ", weight_decay ",
                               exact(o.weight_decay)));
  if (o.learning_rate_schedule != nullptr) {
    lines.push_back(absl::StrCat("learning rate schedule: ", o.learning_rate_schedule->Describe()));
  }
  if (o.clipping.active()) {
    lines.push_back(absl::StrCat("gradient clipping: clipnorm ", exact(o.clipping.clipnorm),
                                 ", global_clipnorm ", exact(o.clipping.global_clipnorm),
                                 ", clipvalue ", exact(o.clipping.clipvalue)));
  }
  lines.push_back(absl::StrCat("precision: ", PrecisionName(compile_options_.precision)));
  // Workers that disagree would send frames of another dtype mid-step: say it now.
  lines.push_back(absl::StrCat("gradient all-reduce compression: ",
                               GradientCompressionName(strategy_->options().communication.compression)));
  // It also picks how all-gathers run (flat or across hosts first): every worker
  // must take the same path.
  lines.push_back(absl::StrCat("collective algorithm: ",
                               AllReduceAlgorithmName(strategy_->communicator()->options().allreduce_algorithm)));
  const std::vector<Variable*> trainable = variables();
  if (std::any_of(trainable.begin(), trainable.end(), [](const Variable* v) { return v->sparse_gradient; })) {
    // Sparse and dense reductions are different collectives: say it now.
    lines.push_back(absl::StrCat("sparse gradient reduction: ",
                                 SparseReductionName(strategy_->options().communication.sparse_reduction)));
  }
  std::vector<std::string> metric_names;
  for (const Metric& m : metrics_) metric_names.push_back(m.name());
  lines.push_back(absl::StrCat("metrics: ", absl::StrJoin(metric_names, ", ")));
  return lines;
}

absl::Status Sequential::EnsureReady(const Shape& input_shape) {
  if (!compiled_) return absl::FailedPreconditionError("call Compile before Fit/Evaluate/Predict");
  return Build(input_shape);
}

absl::Status Sequential::Forward(const Tensor& x, bool training) {
  input_ = &x;
  std::vector<const Tensor*> xs;
  for (size_t l = 0; l < layers_.size(); ++l) {
    TimelineSpan span("compute", "forward ", layers_[l]->name());
    xs.clear();
    for (int a : inputs_[l]) xs.push_back(a == 0 ? input_ : &acts_[a]);
    if (layers_[l]->merges()) {
      RW_RETURN_IF_ERROR(static_cast<MergeLayer&>(*layers_[l]).ForwardMerge(*kernels_, xs, &acts_[l + 1]));
    } else {
      RW_RETURN_IF_ERROR(layers_[l]->Forward(*kernels_, *xs[0], &acts_[l + 1], training));
    }
  }
  return absl::OkStatus();
}

absl::Status Sequential::BackwardLayer(size_t l) {
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
    RW_RETURN_IF_ERROR(static_cast<MergeLayer&>(layer).BackwardMerge(*kernels_, xs, grads_[l + 1], dxs));
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

absl::StatusOr<float> Sequential::TrainStep(const struct Batch& batch, float weight) {
  if (batch.size() == 0) {
    if (!built_) return absl::FailedPreconditionError("a training step with no examples on a model that is not built");
    // No examples for this replica at this step (the short end of a pass): it
    // adds nothing to the average but takes part in every collective.
    reducer_->BeginStep(0.f);
    // Where the others' layers sum over replicas, this one adds zeros.
    for (size_t l = 0; l < layers_.size(); ++l) RW_RETURN_IF_ERROR(layers_[l]->JoinWithoutBatch(true));
    for (size_t l = layers_.size(); l-- > 0;) {
      if (runs_backward_[l]) RW_RETURN_IF_ERROR(layers_[l]->JoinWithoutBatch(false));
    }
    for (size_t l = layers_.size(); l-- > 0;) {
      for (Variable* v : layers_[l]->variables()) reducer_->Ready(v);
    }
    RW_RETURN_IF_ERROR(reducer_->FinishStep());
    RW_ASSIGN_OR_RETURN(std::vector<double> batch_state, ReduceBatchState(/*had_batch=*/false));
    optimizer_->Apply(variables());
    ApplyBatchState(batch_state);
    return 0.f;
  }
  RW_RETURN_IF_ERROR(EnsureReady(Shape(batch.features.shape().begin() + 1, batch.features.shape().end())));
  reducer_->BeginStep(weight);
  absl::Status status = Forward(batch.features, /*training=*/true);
  TimelineSpan loss_span("compute", "loss");
  absl::StatusOr<float> loss = status.ok() ? loss_->Compute(acts_.back(), batch.labels, &grads_.back())
                                           : absl::StatusOr<float>(status);
  loss_span.End();
  std::fill(grad_set_.begin(), grad_set_.end(), 0);
  for (size_t l = layers_.size(); l-- > 0 && loss.ok();) {
    if (!runs_backward_[l]) continue;
    status = BackwardLayer(l);
    if (!status.ok()) loss = status;
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
  optimizer_->Apply(variables());
  optimizer_span.End();
  ApplyBatchState(batch_state);
  return loss;
}

absl::StatusOr<std::vector<double>> Sequential::ReduceBatchState(bool had_batch) {
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
    *in_step_collective_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return sums;
}

void Sequential::ApplyBatchState(const std::vector<double>& sums) {
  int64_t at = 0;
  for (const auto& layer : layers_) {
    if (layer->batch_sums_size() > 0) layer->UpdateFromBatchSums(sums.data() + at);
    at += layer->batch_sums_size();
    layer->CommitStep();
  }
}

int64_t Sequential::MetricStateSize() const {
  int64_t n = 0;
  for (const Metric& m : metrics_) n += m.state_size();
  return n;
}

std::vector<double> Sequential::BatchSums(const std::vector<int32_t>& labels, double loss) {
  std::vector<double> sums(static_cast<size_t>(2 + MetricStateSize()), 0.0);
  if (labels.empty()) return sums;
  const double n = static_cast<double>(labels.size());
  sums[0] = loss * n;
  sums[1] = n;
  double* state = sums.data() + 2;
  for (const Metric& m : metrics_) {
    m.Accumulate(acts_.back(), labels, loss, loss_->from_logits(), state);
    state += m.state_size();
  }
  return sums;
}

Logs Sequential::LogsFrom(const std::vector<double>& sums) const {
  Logs logs;
  logs["loss"] = sums[1] > 0 ? sums[0] / sums[1] : 0;
  const double* state = sums.data() + 2;
  for (const Metric& m : metrics_) {
    logs[m.name()] = m.Result(state);
    state += m.state_size();
  }
  return logs;
}


absl::StatusOr<EvaluateResult> Sequential::Evaluate(const Dataset& data, int64_t batch_size) {
  if (data.examples().count() == 0) return absl::InvalidArgumentError("evaluate on an empty dataset");
  RW_RETURN_IF_ERROR(EnsureReady(data.examples().example_shape()));
  const int replicas = strategy_->num_replicas_in_sync();
  RW_ASSIGN_OR_RETURN(Dataset shard, data.Shard(replicas, strategy_->rank(), AutoShardPolicy::kData));
  shard = shard.Batch(std::max<int64_t>(1, batch_size / replicas));
  std::vector<double> sums(static_cast<size_t>(2 + MetricStateSize()), 0.0);
  std::unique_ptr<Dataset::Iterator> it = shard.Iterate(0);
  struct Batch batch;
  while (it->Next(&batch)) {
    absl::Status forward = Forward(batch.features, /*training=*/false);
    absl::StatusOr<float> loss =
        forward.ok() ? loss_->Compute(acts_.back(), batch.labels, nullptr) : absl::StatusOr<float>(forward);
    if (!loss.ok()) {
      // Data only this worker holds (a bad id, a bad label): the others must not
      // wait for its sums until a deadline.
      strategy_->communicator()->Barrier().IgnoreError();
      return loss.status();
    }
    std::vector<double> batch_sums = BatchSums(batch.labels, *loss);
    for (size_t i = 0; i < sums.size(); ++i) sums[i] += batch_sums[i];
  }
  if (!it->status().ok()) {
    strategy_->communicator()->Barrier().IgnoreError();
    return it->status();
  }
  RW_RETURN_IF_ERROR(strategy_->Reduce(ReduceOp::kSum, sums.data(), static_cast<int64_t>(sums.size())));
  const Logs logs = LogsFrom(sums);
  EvaluateResult result;
  result.loss = logs.at("loss");
  result.examples = static_cast<int64_t>(sums[1]);
  for (const Metric& m : metrics_) result.metrics[m.name()] = logs.at(m.name());
  return result;
}

absl::StatusOr<Tensor> Sequential::Predict(const Tensor& x, int64_t batch_size) {
  if (x.rank() < 1 || x.dim(0) == 0) return absl::InvalidArgumentError("predict on no examples");
  RW_RETURN_IF_ERROR(EnsureReady(Shape(x.shape().begin() + 1, x.shape().end())));
  const int64_t count = x.dim(0), size = x.size() / count;
  Tensor out;
  Tensor chunk;
  for (int64_t begin = 0; begin < count; begin += batch_size) {
    const int64_t n = std::min(batch_size, count - begin);
    Shape shape = x.shape();
    shape[0] = n;
    chunk.Resize(shape);
    std::copy(x.data() + begin * size, x.data() + (begin + n) * size, chunk.data());
    RW_RETURN_IF_ERROR(Forward(chunk, /*training=*/false));
    Tensor& y = acts_.back();
    const int64_t width = y.size() / n;
    if (fused_softmax_) {
      RW_ASSIGN_OR_RETURN(std::unique_ptr<SoftmaxKernel> softmax, SoftmaxKernel::Create(*kernels_, n, width));
      Tensor probs(y.shape());
      softmax->Forward(*kernels_, y.data(), probs.data());
      y = std::move(probs);
    }
    if (begin == 0) out = Tensor(WithBatch(count, layers_.back()->output_shape()));
    std::copy(y.data(), y.data() + y.size(), out.data() + begin * width);
  }
  return out;
}

std::string Sequential::InputNames(size_t l) const {
  std::vector<std::string> names;
  for (int a : inputs_[l]) names.push_back(a == 0 ? "input" : layers_[a - 1]->name());
  return absl::StrJoin(names, ", ");
}

std::string Sequential::Summary() const {
  // Keras' columns, widened when a layer's "name (type)" is longer; a functional
  // model that is not a chain also says what each layer reads ("Connected to").
  const bool chain = IsChain();
  size_t name_width = 28;
  for (const auto& layer : layers_) {
    name_width = std::max(name_width, layer->name().size() + layer->type().size() + 5);
  }
  const size_t width = name_width + 37 + (chain ? 0 : 26);
  std::ostringstream s;
  const std::string rule(width, '_'), double_rule(width, '=');
  s << "Model: \"" << model_name_ << "\"\n" << rule << "\n";
  if (chain) {
    s << absl::StrFormat(" %-*s%-26s%s\n", name_width, "Layer (type)", "Output Shape", "Param #");
  } else {
    s << absl::StrFormat(" %-*s%-26s%-11sConnected to\n", name_width, "Layer (type)", "Output Shape", "Param #");
  }
  s << double_rule << "\n";
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = *layers_[i];
    std::string shape = "(None";
    for (int64_t d : l.output_shape()) absl::StrAppend(&shape, ", ", d);
    shape += ")";
    if (!built_) shape = "(unbuilt)";
    std::string line = absl::StrFormat(" %-*s%-26s%s", name_width, absl::StrCat(l.name(), " (", l.type(), ")"),
                                       shape, WithCommas(l.param_count()));
    if (!chain) line = absl::StrFormat("%-*s%s", name_width + 38, line, InputNames(i));
    s << line << "\n";
    if (i + 1 < layers_.size()) s << "\n";
  }
  s << double_rule << "\n";
  int64_t trainable = 0;
  for (const auto& layer : layers_) trainable += layer->trainable_param_count();
  s << "Total params: " << WithCommas(param_count()) << "\n";
  s << "Trainable params: " << WithCommas(trainable) << "\n";
  s << "Non-trainable params: " << WithCommas(param_count() - trainable) << "\n" << rule << "\n";
  return s.str();
}

}  // namespace ringwork
