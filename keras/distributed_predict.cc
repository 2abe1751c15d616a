#include "keras/distributed_predict.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace ringwork {

absl::StatusOr<Tensor> PredictAcrossWorkers(Model& model, const Pipeline& data,
                                            const DataBinding& binding, int64_t batch_size) {
  // What every worker decides alike, before any collective.
  if (!model.built()) {
    return absl::FailedPreconditionError("predict: build the model first (or LoadModel)");
  }
  if (model.output_names().size() != 1) {
    return absl::InvalidArgumentError("predict: a model of one output (PredictOutputs for more)");
  }
  const PipelineNode* end = &data.node();
  while (end->name() == "prefetch" && end->input() != nullptr) end = end->input().get();
  if (end->kind() == PipelineNode::Kind::kBatch) {
    return absl::InvalidArgumentError(
        "predict: give the pipeline unbatched: the workers share it element by element");
  }
  MultiWorkerMirroredStrategy* strategy = model.strategy();
  const int workers = strategy->num_replicas_in_sync();
  if (workers == 1) return model.Predict(data, binding, batch_size);
  const int rank = strategy->rank();
  const Shape out_shape = model.OutputShapes()[0];
  const int64_t width = NumElements(out_shape);
  absl::StatusOr<Tensor> mine = model.Predict(data.Shard(workers, rank), binding, batch_size);
  if (!mine.ok() && mine.status().message() == kPredictOnNoExamples) {
    mine = Tensor(WithBatch(0, out_shape));  // Fewer elements than workers.
  }
  const int64_t rows = mine.ok() ? mine->dim(0) : 0;
  // Whether every worker could, with rows of the model's width, and the most rows any has.
  const bool fine = mine.ok() && mine->size() == rows * width;
  double agreed[2] = {fine ? 0.0 : 1.0, static_cast<double>(rows)};
  RW_RETURN_IF_ERROR(strategy->Reduce(ReduceOp::kMax, agreed, 2));
  double total = static_cast<double>(rows);
  RW_RETURN_IF_ERROR(strategy->Reduce(ReduceOp::kSum, &total, 1));
  if (!mine.ok()) return mine.status();
  if (!fine) return absl::InternalError("predict: rows of another width than the model's output");
  if (agreed[0] != 0) {
    return absl::AbortedError("predict: a peer could not predict its share (see its log)");
  }
  const int64_t most = static_cast<int64_t>(agreed[1]);
  // Every worker's rows, padded to the most, side by side in rank order.
  std::vector<float> padded(static_cast<size_t>(most * width), 0.0f);
  std::copy(mine->data(), mine->data() + mine->size(), padded.begin());
  std::vector<float> all(padded.size() * static_cast<size_t>(workers));
  RW_RETURN_IF_ERROR(strategy->communicator()->AllGather(padded.data(), all.data(), padded.size(),
                                                         DataType::kFloat32));
  Tensor out(WithBatch(static_cast<int64_t>(total), out_shape));
  // Element i was worker (i mod N)'s row i / N.
  for (int64_t i = 0; i < out.dim(0); ++i) {
    const float* from = all.data() + ((i % workers) * most + i / workers) * width;
    std::copy(from, from + width, out.data() + i * width);
  }
  return out;
}

}  // namespace ringwork
