// Model's inference side: Evaluate (also after fit, surviving a peer's failure
// with elastic training), Predict and Summary.
#include <algorithm>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/crash_points.h"
#include "base/exit_code.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "keras/activation_function.h"
#include "keras/model.h"
#include "kernels/softmax.h"
#include "strategy/distributed_pipeline.h"

namespace ringwork {
namespace {

std::string WithCommas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

EvaluateResult ResultFrom(const Logs& logs, double examples) {
  EvaluateResult result;
  result.loss = logs.at("loss");
  result.examples = static_cast<int64_t>(examples);
  for (const auto& [name, value] : logs) {
    if (name != "loss") result.metrics[name] = value;
  }
  return result;
}

}  // namespace

absl::StatusOr<EvaluateResult> Model::Evaluate(const Dataset& data, int64_t batch_size) {
  if (data.examples().count() == 0)
    return absl::InvalidArgumentError("evaluate on an empty dataset");
  RW_RETURN_IF_ERROR(EnsureReady(data.examples().example_shape()));
  const int replicas = strategy_->num_replicas_in_sync();
  RW_ASSIGN_OR_RETURN(Dataset shard,
                      data.Shard(replicas, strategy_->rank(), AutoShardPolicy::kData));
  shard = shard.Batch(std::max<int64_t>(1, batch_size / replicas));
  std::vector<double> sums(static_cast<size_t>(SumsSize()), 0.0);
  std::unique_ptr<Dataset::Iterator> it = shard.Iterate(0);
  struct Batch batch;
  while (it->Next(&batch)) {
    absl::Status forward = Forward(batch.features, /*training=*/false);
    absl::StatusOr<float> loss =
        forward.ok() ? ComputeLoss(batch, /*gradients=*/false) : absl::StatusOr<float>(forward);
    if (!loss.ok()) {
      // Data only this worker holds (a bad id, a bad label): the others must not
      // wait for its sums until a deadline.
      strategy_->communicator()->Barrier().IgnoreError();
      return loss.status();
    }
    std::vector<double> batch_sums = BatchSums(batch, *loss);
    for (size_t i = 0; i < sums.size(); ++i) sums[i] += batch_sums[i];
  }
  if (!it->status().ok()) {
    strategy_->communicator()->Barrier().IgnoreError();
    return it->status();
  }
  RW_RETURN_IF_ERROR(
      strategy_->Reduce(ReduceOp::kSum, sums.data(), static_cast<int64_t>(sums.size())));
  return ResultFrom(LogsFrom(sums), sums[1]);
}

absl::StatusOr<EvaluateResult> Model::Evaluate(const Pipeline& data, const DataBinding& binding,
                                               int64_t batch_size) {
  if (!compiled_) return absl::FailedPreconditionError("call Compile before Fit/Evaluate/Predict");
  // Each worker evaluates its share (FILE or DATA, as fit reads), in steps that
  // every worker takes together (one count all-reduce each), then the sums.
  DistributedPipelineOptions read;
  read.default_batch = batch_size;  // Unless the pipeline is batched.
  read.prefetch_batches = DefaultPrefetchBatches(strategy_->cores_per_worker());
  read.autotune_threads = strategy_->cores_per_worker();
  RW_ASSIGN_OR_RETURN(std::unique_ptr<DistributedPipeline> stream,
                      DistributedPipeline::Create(strategy_, data, read));
  RW_ASSIGN_OR_RETURN(const PipelineBinding bound,
                      BindPipeline(stream->element_spec(), binding, signature()));
  RW_RETURN_IF_ERROR(EnsureReady(bound.input_shape));
  RW_RETURN_IF_ERROR(stream->StartPass(0, 0));
  std::vector<double> sums(static_cast<size_t>(SumsSize()), 0.0);
  Element element;
  struct Batch batch;
  double weight = 0;
  while (true) {
    RW_ASSIGN_OR_RETURN(const bool more, stream->NextStep(&element, &weight));
    if (!more) break;
    absl::Status failed = ToModelBatch(element, stream->element_spec(), bound, &batch);
    if (!failed.ok()) failed = InvalidDataError(absl::StrCat(OriginOf(element), failed.message()));
    if (failed.ok() && batch.size() == 0) continue;  // This worker's share of the step is empty.
    float loss = 0;
    if (failed.ok()) failed = Forward(batch.features, /*training=*/false);
    if (failed.ok()) {
      absl::StatusOr<float> computed = ComputeLoss(batch, /*gradients=*/false);
      if (computed.ok()) loss = *computed;
      failed = computed.status();
    }
    if (!failed.ok()) {
      // Data only this worker holds: the others must not wait for it.
      strategy_->Abort(failed);
      return failed;
    }
    std::vector<double> batch_sums = BatchSums(batch, loss);
    for (size_t i = 0; i < sums.size(); ++i) sums[i] += batch_sums[i];
  }
  RW_RETURN_IF_ERROR(
      strategy_->Reduce(ReduceOp::kSum, sums.data(), static_cast<int64_t>(sums.size())));
  return ResultFrom(LogsFrom(sums), sums[1]);
}

absl::StatusOr<EvaluateResult> Model::EvaluateAfterFit(const Dataset& data, int64_t batch_size) {
  return EvaluateSurvivingPeers([&] { return Evaluate(data, batch_size); });
}

absl::StatusOr<EvaluateResult> Model::EvaluateAfterFit(const Pipeline& data,
                                                       const DataBinding& binding,
                                                       int64_t batch_size) {
  // Each round reads the files afresh, sharded over the workers still running.
  return EvaluateSurvivingPeers([&] { return Evaluate(data, binding, batch_size); });
}

absl::StatusOr<EvaluateResult> Model::EvaluateSurvivingPeers(
    const std::function<absl::StatusOr<EvaluateResult>()>& evaluate) {
  CrashPoint("final_evaluate");  // Tests: a worker dies as the final evaluation starts.
  for (int round = 1;; ++round) {
    absl::StatusOr<EvaluateResult> result = evaluate();
    if (result.ok() || round > 3 || !ended_fit_.has_value()) return result;
    // The workers still running may include some still ending fit (the failure
    // came in its last operation): they regroup there, and learn from this
    // worker's progress (past every operation of fit) that training ended. All
    // run the same agreement, then evaluate.
    ElasticRun run(strategy_, this, *ended_fit_, ElasticRun::kEnded);
    if (!run.CanSurvive(result.status())) return result;
    const int before = strategy_->num_replicas_in_sync();
    int64_t slowest = 0;
    std::vector<double> sums(static_cast<size_t>(SumsSize()), 0.0);
    RW_RETURN_IF_ERROR(run.SurvivePeerFailure(result.status(), &slowest, &sums));
    RW_LOG(WARNING) << "generation " << strategy_->generation() << ": " << strategy_->departed()
                    << " left: " << result.status().message() << "; "
                    << strategy_->num_replicas_in_sync() << " of " << before
                    << " workers evaluate again (" << strategy_->cluster().configured_world_size()
                    << " in the cluster)";
  }
}

absl::StatusOr<std::vector<const Tensor*>> Model::PredictChunk(const Tensor& chunk) {
  RW_RETURN_IF_ERROR(Forward(chunk, /*training=*/false));
  std::vector<const Tensor*> outputs;
  for (size_t k = 0; k < outputs_.size(); ++k) {
    Tensor& y = acts_[outputs_[k]];
    const int64_t n = chunk.dim(0), width = n == 0 ? 0 : y.size() / n;
    if (fused_[k] == kFusedSoftmax && n > 0) {
      // The output's final softmax, fused into the loss in training, runs here.
      RW_ASSIGN_OR_RETURN(std::unique_ptr<SoftmaxKernel> softmax,
                          SoftmaxKernel::Create(*kernels_, n, width));
      Tensor probs(y.shape());
      softmax->Forward(*kernels_, y.data(), probs.data());
      y = std::move(probs);
    } else if (fused_[k] == kFusedSigmoid) {
      SigmoidInPlace(&y);  // And so does a sigmoid.
    }
    outputs.push_back(&y);
  }
  return outputs;
}

namespace {

// Predictions collected chunk by chunk, per output.
class PredictionsOf {
 public:
  explicit PredictionsOf(size_t outputs) : values_(outputs) {}
  void Add(const std::vector<const Tensor*>& chunk) {
    for (size_t k = 0; k < chunk.size(); ++k) {
      values_[k].insert(values_[k].end(), chunk[k]->data(), chunk[k]->data() + chunk[k]->size());
    }
  }
  // [count, ...each output's shape].
  std::vector<Tensor> Take(int64_t count, const std::vector<Shape>& shapes) {
    std::vector<Tensor> out;
    for (size_t k = 0; k < values_.size(); ++k) {
      out.emplace_back(WithBatch(count, shapes[k]));
      std::copy(values_[k].begin(), values_[k].end(), out.back().data());
    }
    return out;
  }

 private:
  std::vector<std::vector<float>> values_;
};

absl::StatusOr<Tensor> OnlyOutput(absl::StatusOr<std::vector<Tensor>> outputs) {
  if (!outputs.ok()) return outputs.status();
  if (outputs->size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model has ", outputs->size(), " outputs: PredictOutputs gives each"));
  }
  return std::move((*outputs)[0]);
}

}  // namespace

int64_t Model::PredictTile() const {
  // Tiles whose largest activation is about 2 MiB (a core's L2 and some): for
  // train's CNN on 28x28 images, 41 at a time. Measured there, 256 images
  // took 6.8 ms in such tiles against 8.7 ms at once; 1, 3 and 4 MiB were slower.
  int64_t widest = NumElements(input_shape_);
  for (const auto& layer : layers_) widest = std::max(widest, NumElements(layer->output_shape()));
  constexpr int64_t kTileBytes = 2 << 20;
  return std::max<int64_t>(8, kTileBytes / (4 * std::max<int64_t>(1, widest)));
}

std::vector<Shape> Model::OutputShapes() const {
  std::vector<Shape> shapes;
  for (int a : outputs_) shapes.push_back(layers_[a - 1]->output_shape());
  return shapes;
}

absl::StatusOr<Tensor> Model::Predict(const Tensor& x, int64_t batch_size) {
  return OnlyOutput(PredictOutputs(x, batch_size));
}

absl::StatusOr<Tensor> Model::Predict(const Pipeline& data, const DataBinding& binding,
                                      int64_t batch_size) {
  return OnlyOutput(PredictOutputs(data, binding, batch_size));
}

absl::StatusOr<std::vector<Tensor>> Model::PredictOutputs(const Tensor& x, int64_t batch_size) {
  if (x.rank() < 1 || x.dim(0) == 0) return absl::InvalidArgumentError(kPredictOnNoExamples);
  RW_RETURN_IF_ERROR(EnsureReady(Shape(x.shape().begin() + 1, x.shape().end())));
  const int64_t count = x.dim(0), size = x.size() / count;
  // batch_size only sets how many examples go through at once, as in Keras; a
  // tile of them whose activations stay in the cache goes faster.
  const int64_t step = std::min(batch_size, PredictTile());
  PredictionsOf predictions(outputs_.size());
  Tensor chunk;
  for (int64_t begin = 0; begin < count; begin += step) {
    const int64_t n = std::min(step, count - begin);
    Shape shape = x.shape();
    shape[0] = n;
    chunk.Resize(shape);
    std::copy(x.data() + begin * size, x.data() + (begin + n) * size, chunk.data());
    RW_ASSIGN_OR_RETURN(const std::vector<const Tensor*> y, PredictChunk(chunk));
    predictions.Add(y);
  }
  return predictions.Take(count, OutputShapes());
}

absl::StatusOr<std::vector<Tensor>> Model::PredictOutputs(const Pipeline& data,
                                                          const DataBinding& binding,
                                                          int64_t batch_size) {
  if (!compiled_) return absl::FailedPreconditionError("call Compile before Fit/Evaluate/Predict");
  // On this worker alone, every element in order (the replicas are identical).
  // Batched already (perhaps then prefetched), or batched here.
  const PipelineNode* end = &data.node();
  while (end->name() == "prefetch" && end->input() != nullptr) end = end->input().get();
  const bool batched_already = end->kind() == PipelineNode::Kind::kBatch && end->input() != nullptr;
  // The inputs as Fit binds them, by one element's spec (targets need not be
  // there: the model predicts them).
  const ElementSpec& spec = batched_already ? end->input()->spec() : data.spec();
  std::vector<std::string> features = binding.features;
  if (features.empty()) {
    bool named = !input_names_.empty();
    for (const std::string& name : input_names_) named = named && FeatureIndex(spec, name) >= 0;
    if (named) {
      features = input_names_;
    } else if (spec.size() == 1) {
      features = {spec[0].name};
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("predict: name the input feature", input_names_.size() > 1 ? "s" : "",
                       " (binding.features) among ", SpecString(spec)));
    }
  }
  PipelineBinding bound;
  RW_RETURN_IF_ERROR(BindInputs(spec, features, signature(), &bound));
  const Pipeline batched = batched_already ? data : data.Batch(std::min(batch_size, PredictTile()));
  std::unique_ptr<ElementIterator> it =
      batched.Iterate({.autotune_threads = strategy_->cores_per_worker()});
  Element element;
  Tensor x;
  PredictionsOf predictions(outputs_.empty() ? 1 : outputs_.size());
  int64_t count = 0;
  while (true) {
    absl::StatusOr<bool> more = it->Next(&element);
    if (!more.ok()) return InvalidDataError(more.status().message());  // Names file, record.
    if (!*more) break;
    absl::Status converted = InputsToFloat(element, bound, &x);
    if (!converted.ok()) {
      return InvalidDataError(absl::StrCat(OriginOf(element), converted.message()));
    }
    if (count == 0) RW_RETURN_IF_ERROR(EnsureReady(Shape(x.shape().begin() + 1, x.shape().end())));
    RW_ASSIGN_OR_RETURN(const std::vector<const Tensor*> y, PredictChunk(x));
    predictions.Add(y);
    count += x.dim(0);
  }
  if (count == 0) return absl::InvalidArgumentError(kPredictOnNoExamples);
  return predictions.Take(count, OutputShapes());
}

std::string Model::InputNames(size_t l) const {
  std::vector<std::string> names;
  for (int a : inputs_[l]) names.push_back(a == 0 ? "input" : layers_[a - 1]->name());
  return absl::StrJoin(names, ", ");
}

std::string Model::Summary() const {
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
    s << absl::StrFormat(" %-*s%-26s%-11sConnected to\n", name_width, "Layer (type)",
                         "Output Shape", "Param #");
  }
  s << double_rule << "\n";
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = *layers_[i];
    std::string shape = "(None";
    for (int64_t d : l.output_shape()) absl::StrAppend(&shape, ", ", d);
    shape += ")";
    if (!built_) shape = "(unbuilt)";
    std::string line =
        absl::StrFormat(" %-*s%-26s%s", name_width, absl::StrCat(l.name(), " (", l.type(), ")"),
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
