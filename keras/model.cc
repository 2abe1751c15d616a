// Model: the layer graph, compile, build (variables, the agreement check, the
// chief's broadcast) and the names of things. The training step is in
// model_step.cc, evaluation, prediction and the summary in model_inference.cc,
// decisions and what the ring's changes need in model_controls.cc, and Fit in
// fit_loop.cc.
#include "keras/model.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/cpu_cores.h"
#include "base/logging.h"
#include "base/shortest_decimal.h"
#include "base/status_macros.h"
#include "keras/custom_objects.h"
#include "keras/fit_loop.h"
#include "keras/shared_layer_call.h"
#include "observability/timeline.h"

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

}  // namespace

Model::Model()
    : strategy_(MultiWorkerMirroredStrategy::Current()),
      created_outside_scope_(strategy_ == nullptr) {}

Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;

void Model::AddNode(std::unique_ptr<Layer> layer, std::vector<int> inputs) {
  const std::string base = SnakeCase(layer->type());
  while (layer->name().empty()) {
    // The next of dense, dense_1, ... that no layer has (a Named() one may).
    const int n = type_counts_[base]++;
    std::string name = n == 0 ? base : absl::StrCat(base, "_", n);
    if (std::none_of(layers_.begin(), layers_.end(),
                     [&](const auto& l) { return l->name() == name; })) {
      layer->set_name(std::move(name));
    }
  }
  layers_.push_back(std::move(layer));
  inputs_.push_back(std::move(inputs));
}

bool Model::IsChain() const {
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (inputs_[l] != std::vector<int>{static_cast<int>(l)}) return false;
  }
  return true;
}

std::vector<Variable*> Model::weights() const {
  std::vector<Variable*> all;
  for (const auto& layer : layers_) {
    for (Variable* v : layer->weights()) all.push_back(v);
  }
  return all;
}

std::vector<Variable*> Model::trainable_variables() const {
  std::vector<Variable*> all;
  for (const auto& layer : layers_) {
    for (Variable* v : layer->variables()) all.push_back(v);
  }
  return all;
}

std::vector<Variable*> Model::non_trainable_variables() const {
  std::vector<Variable*> all;
  for (const auto& layer : layers_) {
    for (Variable* v : layer->non_trainable_variables()) all.push_back(v);
  }
  return all;
}

int64_t Model::param_count() const {
  int64_t n = 0;
  for (const auto& layer : layers_) n += layer->param_count();
  return n;
}

absl::Status Model::Compile(const CompileOptions& options) {
  RW_RETURN_IF_ERROR(definition_error_);
  if (layers_.empty()) return absl::InvalidArgumentError("the model has no layers");
  std::set<std::string> names;
  for (const auto& layer : layers_) {
    if (!names.insert(layer->name()).second) {
      return absl::InvalidArgumentError(absl::StrCat("two layers are named \"", layer->name(),
                                                     "\": a model's layer names must be unique"));
    }
  }
  if (built_ && (options.intra_op_threads != compile_options_.intra_op_threads ||
                 options.precision != compile_options_.precision)) {
    // The layers' kernels were made for the first ones.
    return absl::FailedPreconditionError(
        "a built model keeps its intra_op_threads and precision when it compiles again");
  }
  compile_options_ = options;
  compile_options_.optimizer = WithKerasDefaults(options.optimizer);
  const std::vector<std::string> outputs = output_names();
  auto check_name = [&](const std::string& name, const char* field) -> absl::Status {
    if (std::find(outputs.begin(), outputs.end(), name) != outputs.end()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("CompileOptions::", field, " names \"", name,
                                                   "\", which is not an output of the model (",
                                                   absl::StrJoin(outputs, ", "), ")"));
  };
  for (const auto& [name, spec] : options.losses) RW_RETURN_IF_ERROR(check_name(name, "losses"));
  for (const auto& [name, w] : options.loss_weights) {
    RW_RETURN_IF_ERROR(check_name(name, "loss_weights"));
  }
  losses_.clear();
  loss_weights_.clear();
  for (const std::string& name : outputs) {
    const auto named = options.losses.find(name);
    RW_ASSIGN_OR_RETURN(Loss loss,
                        Loss::Create(named != options.losses.end() ? named->second : options.loss));
    const auto weight = options.loss_weights.find(name);
    losses_.push_back(std::move(loss));
    loss_weights_.push_back(weight != options.loss_weights.end() ? weight->second : 1.f);
  }
  if (fused_.size() != outputs.size()) fused_.assign(outputs.size(), kFusedNone);
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (fused_[k] == kFusedNone) continue;
    // Compiled again after Build: the activation stays in the loss only for a
    // loss that takes it.
    auto& out = dynamic_cast<LogitsOutput&>(*layers_[static_cast<size_t>(outputs_[k] - 1)]);
    if (FusionFor(out.final_activation(), losses_[k], 1) == fused_[k]) {
      losses_[k].set_fused_logits();
    } else {
      out.OutputLogits(false);
      fused_[k] = kFusedNone;
    }
  }
  output_losses_.assign(outputs.size(), 0.f);
  RW_ASSIGN_OR_RETURN(optimizer_, MakeOptimizer(options.optimizer));
  if (options.metrics == std::vector<std::string>{"auto"}) {
    const bool classifies = std::all_of(losses_.begin(), losses_.end(), [](const Loss& l) {
      return l.kind() == Loss::Kind::kSparseCategoricalCrossentropy ||
             l.kind() == Loss::Kind::kCategoricalCrossentropy ||
             l.kind() == Loss::Kind::kBinaryCrossentropy;
    });
    compile_options_.metrics.clear();
    if (classifies) compile_options_.metrics.push_back("accuracy");
  }
  metrics_.clear();
  for (const std::string& name : compile_options_.metrics) {
    RW_ASSIGN_OR_RETURN(Metric metric, Metric::Create(name));
    metrics_.push_back(metric);
  }
  if (strategy_ == nullptr) {
    // Created outside any scope: train alone, as TensorFlow's default strategy
    // does (Fit refuses to where this task is one of a cluster's workers).
    StrategyOptions local;
    RW_ASSIGN_OR_RETURN(default_strategy_, MultiWorkerMirroredStrategy::Create(
                                               ClusterConfig::Local("local (no strategy)"), local));
    strategy_ = default_strategy_.get();
  }
  if (!built_) {  // Built, its layers' kernels hold on to the context they were made in.
    kernels_ =
        std::make_unique<KernelContext>(KernelOptions{options.intra_op_threads, options.precision},
                                        strategy_->workers_on_this_host());
  }
  compiled_ = true;
  if (built_) return PrepareGradients();  // Layers may have been frozen or unfrozen.
  return absl::OkStatus();
}

// What training needs beyond the weights, from which layers learn: the
// gradient arena and its reducer, frozen layers' scratch slots, the batch
// statistics' size, where the backward pass runs. Build does it; Compile again
// after Layer::set_trainable redoes it, as Keras asks to compile after freezing.
absl::Status Model::PrepareGradients() {
  const std::vector<Variable*> vars = trainable_variables();
  // Before anything is exchanged: a different model would otherwise fail later
  // with a less helpful collective mismatch, or train on garbage.
  RW_RETURN_IF_ERROR(strategy_->CheckSameOnEveryWorker("model", AgreementLines()));
  // A layer that sums over replicas inside its backward pass needs the
  // communicator then: gradients are reduced after the backward pass.
  layer_collectives_ = std::any_of(layers_.begin(), layers_.end(),
                                   [](const auto& layer) { return layer->sums_over_replicas(); });
  reducer_ = strategy_->MakeGradientReducer(
      vars, /*allow_overlap=*/!layer_collectives_);  // Sets every gradient slot.
  // A frozen layer between trainable ones still runs backward (for its input's
  // gradient); what it computes for its own variables goes here, unused.
  frozen_grads_.clear();
  for (const auto& layer : layers_) {
    for (Variable* v : layer->frozen_variables()) {
      frozen_grads_.emplace_back(static_cast<size_t>(v->size()), 0.0f);
      v->grad = frozen_grads_.back().data();
    }
  }
  RW_RETURN_IF_ERROR(strategy_->BroadcastVariables(weights()));
  batch_sums_size_ = 0;
  for (const auto& layer : layers_) batch_sums_size_ += layer->batch_sums_size();
  acts_.assign(layers_.size() + 1, Tensor());
  grads_.assign(layers_.size() + 1, Tensor());
  grad_set_.assign(layers_.size() + 1, 0);
  // Below the layers with variables no gradient is needed: a model that opens
  // with Flatten would otherwise compute its first Dense layer's input gradient
  // (the largest matmul of an MLP's step) for nothing.
  // A shared layer's later calls add their gradients into its owner's (which
  // comes first, so its backward pass runs after theirs).
  shared_calls_.assign(layers_.size(), {});
  runs_backward_.assign(layers_.size(), false);
  for (size_t l = 0; l < layers_.size(); ++l) {
    bool runs = !layers_[l]->variables().empty();
    if (auto* call = dynamic_cast<SharedLayerCall*>(layers_[l].get())) {
      for (size_t owner = 0; owner < l; ++owner) {
        if (layers_[owner].get() == &call->owner()) shared_calls_[owner].push_back(call);
      }
      runs = !call->owner().variables().empty();
    }
    for (int a : inputs_[l]) runs = runs || (a > 0 && runs_backward_[a - 1]);
    runs_backward_[l] = runs;
  }
  return absl::OkStatus();
}

char Model::FusionFor(const std::string& activation, const Loss& loss, size_t output_rank) {
  if (loss.from_logits()) return kFusedNone;
  // A softmax over one axis only: the layer's is over the last, the loss's over
  // the example.
  if (activation == "softmax" && output_rank == 1 &&
      loss.kind() == Loss::Kind::kSparseCategoricalCrossentropy) {
    return kFusedSoftmax;
  }
  // Keras computes binary_crossentropy from a sigmoid's logits (its _keras_logits):
  // a confidently wrong example keeps its gradient and its loss past 15.9.
  if (activation == "sigmoid" && loss.kind() == Loss::Kind::kBinaryCrossentropy) {
    return kFusedSigmoid;
  }
  return kFusedNone;
}

absl::Status Model::Build(const Shape& input_shape) {
  if (built_) {
    if (input_shape != input_shape_) {
      return absl::InvalidArgumentError(absl::StrCat("the model was built for inputs of shape ",
                                                     ShapeString(input_shape_), ", got ",
                                                     ShapeString(input_shape)));
    }
    return absl::OkStatus();
  }
  if (!compiled_) return absl::FailedPreconditionError("call Compile before Build");
  if (declared_input_.has_value() && *declared_input_ != input_shape) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model's inputs take examples of shape ", ShapeString(*declared_input_),
                     ", but the data's examples have shape ", ShapeString(input_shape)));
  }
  input_shape_ = input_shape;
  if (outputs_.empty()) outputs_ = {static_cast<int>(layers_.size())};  // A chain's last layer.
  std::vector<Shape> shapes = {input_shape};                            // Per activation.
  BuildContext ctx{compile_options_.seed};
  // The strategy, not this model (which may be moved after Build).
  ctx.sum_over_replicas = [strategy = strategy_, seconds = in_step_collective_s_](double* data,
                                                                                  int64_t count) {
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
    absl::StatusOr<Shape> out =
        layer.merges() ? static_cast<MergeLayer&>(layer).BuildMerge(in) : layer.Build(in[0], ctx);
    if (!out.ok()) {
      std::vector<std::string> text;
      for (const Shape& s : in) text.push_back(ShapeString(s));
      return absl::Status(
          out.status().code(),
          absl::StrCat("building layer ", layer.name(), " for input", in.size() > 1 ? "s " : " ",
                       absl::StrJoin(text, " and "), ": ", out.status().message()));
    }
    layer.set_replica(strategy_->rank());
    shapes.push_back(*out);
  }
  RW_RETURN_IF_ERROR(masks_.Plan(layers_, inputs_, shapes, outputs_));
  for (size_t k = 0; k < outputs_.size(); ++k) {
    const int a = outputs_[k];
    // A softmax at an output goes into its loss: the same math, stabler and
    // cheaper (unless another layer reads the probabilities).
    bool read = false;
    for (const std::vector<int>& in : inputs_) {
      read = read || std::find(in.begin(), in.end(), a) != in.end();
    }
    Loss& loss = losses_[k];
    auto* out = read ? nullptr : dynamic_cast<LogitsOutput*>(layers_[a - 1].get());
    const char fusion =
        out != nullptr ? FusionFor(out->final_activation(), loss, shapes[a].size()) : kFusedNone;
    if (fusion != kFusedNone && out->OutputLogits(true)) {
      fused_[k] = fusion;
      loss.set_fused_logits();
    }
    for (const Metric& m : metrics_) {
      const Shape& out = shapes[a];
      absl::Status fits = m.CheckOutputWidth(out.empty() ? 1 : NumElements(out));
      if (!fits.ok() && outputs_.size() > 1) {
        return absl::Status(fits.code(),
                            absl::StrCat("output ", layers_[a - 1]->name(), ": ", fits.message()));
      }
      RW_RETURN_IF_ERROR(fits);
    }
  }
  RW_RETURN_IF_ERROR(PrepareGradients());
  built_ = true;
  LogThreadChoice();
  RW_VLOG(1) << "model built: " << param_count() << " parameters; gradients in "
             << reducer_->DebugString();
  return absl::OkStatus();
}

void Model::LogThreadChoice() const {
  // Once per process: the defaults depend on the host, so say what they chose.
  static std::atomic<bool> logged{false};
  if (logged.exchange(true)) return;
  const int workers = strategy_->workers_on_this_host();
  std::string reduction = "; no gradient all-reduce (one worker)";
  if (strategy_->num_replicas_in_sync() > 1) {
    reduction =
        absl::StrCat("; gradient all-reduce ",
                     reducer_->overlaps() ? "on a second thread during the backward pass"
                                          : "after the backward pass, on the training thread",
                     " (--inter_op_threads=", strategy_->inter_op_threads(),
                     reducer_->overlaps() || strategy_->inter_op_threads() < 2
                         ? ""
                         : "; not with layers that sum over replicas in the backward pass",
                     ")");
  }
  RW_LOG(INFO) << "threads: " << kernels_->threads() << " per kernel (--intra_op_threads; "
               << AvailableCores() << " cores for " << workers << " worker"
               << (workers == 1 ? "" : "s") << " on this host)" << reduction << "; input "
               << (DefaultPrefetchBatches(strategy_->cores_per_worker()) > 0
                       ? "prefetched on a thread"
                       : "gathered on the training thread (one core per worker)");
}

void Model::SetTrainingStep(int64_t step) {
  for (auto& layer : layers_) layer->set_training_step(step);
}

std::vector<std::string> Model::AgreementLines() const {
  std::vector<std::string> lines;
  lines.push_back(absl::StrCat("input: ", ShapeString(input_shape_)));
  for (const Variable* v : trainable_variables()) {
    std::string line =
        absl::StrCat("variable ", v->name, ": float32 ", ShapeString(v->value.shape()));
    // Each replica adds its regularizer's gradient after the all-reduce.
    if (v->l1 != 0 || v->l2 != 0) absl::StrAppend(&line, ", l1 ", v->l1, ", l2 ", v->l2);
    lines.push_back(std::move(line));
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
    // A user's layer: its Keras arguments (its config() is seldom written).
    if (layer.config().empty() && FindLayer(layer.type()) != nullptr) {
      absl::StrAppend(&line, ", ", layer.keras_config().dump());
    }
    if (!chain) absl::StrAppend(&line, ", from ", InputNames(l));
    lines.push_back(std::move(line));
  }
  const std::vector<std::string> outputs = output_names();
  for (size_t k = 0; k < outputs.size(); ++k) {
    const auto named = compile_options_.losses.find(outputs[k]);
    const LossSpec& loss =
        named != compile_options_.losses.end() ? named->second : compile_options_.loss;
    const std::string spec = absl::StrCat(loss.name, loss.from_logits ? " from logits" : "");
    if (outputs.size() == 1 && loss_weights_[k] == 1.f) {
      lines.push_back(absl::StrCat("loss: ", spec));
    } else {
      lines.push_back(absl::StrCat("loss of output ", outputs[k], ": ", spec, ", weight ",
                                   ShortestDecimal(loss_weights_[k])));
    }
  }
  const OptimizerSpec o = WithKerasDefaults(compile_options_.optimizer);
  // Numbers exactly, in the fewest digits that give back the same float, so that
  // learning rates differing after the 6th digit do not pass as equal.
  auto exact = [](float x) { return ShortestDecimal(x); };
  lines.push_back(absl::StrCat(
      "optimizer: ", o.name, ", learning_rate ", exact(*o.learning_rate), ", momentum ",
      exact(o.momentum), ", nesterov ", o.nesterov, ", beta_1 ", exact(o.beta_1), ", beta_2 ",
      exact(o.beta_2), ", epsilon ", exact(o.epsilon), ", weight_decay ", exact(*o.weight_decay),
      ", rho ", exact(o.rho), ", initial_accumulator_value ", exact(o.initial_accumulator_value)));
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
  lines.push_back(
      absl::StrCat("gradient all-reduce compression: ",
                   GradientCompressionName(strategy_->options().communication.compression)));
  // It also picks how all-gathers run (flat or across hosts first): every worker
  // must take the same path.
  lines.push_back(absl::StrCat(
      "collective algorithm: ",
      AllReduceAlgorithmName(strategy_->communicator()->options().allreduce_algorithm)));
  const std::vector<Variable*> trainable = trainable_variables();
  if (std::any_of(trainable.begin(), trainable.end(),
                  [](const Variable* v) { return v->sparse_gradient; })) {
    // Sparse and dense reductions are different collectives: say it now.
    lines.push_back(
        absl::StrCat("sparse gradient reduction: ",
                     SparseReductionName(strategy_->options().communication.sparse_reduction)));
  }
  std::vector<std::string> metric_names;
  for (const Metric& m : metrics_) {
    metric_names.push_back(absl::StrCat(m.name(), " (", m.state_size(), " sums)"));
  }
  lines.push_back(absl::StrCat("metrics: ", absl::StrJoin(metric_names, ", ")));
  return lines;
}

std::vector<std::string> Model::output_names() const {
  if (outputs_.empty()) {
    if (layers_.empty()) return {};
    return {layers_.back()->name()};
  }
  std::vector<std::string> names;
  for (int a : outputs_) names.push_back(layers_[a - 1]->name());
  return names;
}

std::string Model::output_activation(size_t k) const {
  if (layers_.empty()) return "";
  int a = outputs_.empty() ? static_cast<int>(layers_.size()) : outputs_[k];
  // Through layers that pass values on as they are (in inference).
  static const std::set<std::string> through = {"Dropout", "Flatten", "Reshape", "RandomFlip"};
  while (a > 0 && through.count(layers_[static_cast<size_t>(a - 1)]->type()) &&
         inputs_[static_cast<size_t>(a - 1)].size() == 1) {
    a = inputs_[static_cast<size_t>(a - 1)][0];
  }
  return a > 0 ? layers_[static_cast<size_t>(a - 1)]->activation_name() : "";
}

ModelSignature Model::signature() const { return {input_names_, input_shapes_, output_names()}; }

absl::Status Model::EnsureReady(const Shape& input_shape) {
  if (!compiled_) return absl::FailedPreconditionError("call Compile before Fit/Evaluate/Predict");
  return Build(input_shape);
}

absl::Status Model::CheckFitOptions(const FitOptions& options) const {
  if (created_outside_scope_ && !compile_options_.train_alone) {
    RW_RETURN_IF_ERROR(RefuseTrainingAloneInCluster());
  }
  if (!options.class_weight.empty() && output_names().size() > 1) {
    // As Keras: which output's classes would it weigh?
    return absl::InvalidArgumentError(
        "class_weight needs a model of one output; give several outputs per-example weights "
        "(sample_weight) instead");
  }
  return absl::OkStatus();
}

absl::StatusOr<History> Model::Fit(const Dataset& train, const FitOptions& options) {
  RW_RETURN_IF_ERROR(CheckFitOptions(options));
  return FitLoop(this, options).Run(train);
}

absl::StatusOr<History> Model::Fit(const Pipeline& train, const FitOptions& options) {
  RW_RETURN_IF_ERROR(CheckFitOptions(options));
  return FitLoop(this, options).Run(train);
}

absl::StatusOr<History> Model::Fit(const DatasetFn& make_train, const FitOptions& options) {
  RW_RETURN_IF_ERROR(CheckFitOptions(options));
  return FitLoop(this, options).Run(make_train);
}

}  // namespace ringwork
