#include "keras/distributed_predict.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace ringwork {

absl::StatusOr<Tensor> PredictAcrossWorkers(Model& model, const Pipeline& data,
                                            const DataBinding& binding, int64_t batch_size) {
  MultiWorkerMirroredStrategy* strategy = model.strategy();
  const int workers = strategy->num_replicas_in_sync();
  if (workers == 1) return model.Predict(data, binding, batch_size);
  const int rank = strategy->rank();
  absl::StatusOr<Tensor> mine = model.Predict(data.Shard(workers, rank), binding, batch_size);
  // Whether every worker could, how many rows the most has, and each row's width.
  const int64_t rows = mine.ok() ? mine->dim(0) : 0;
  const int64_t width = mine.ok() && rows > 0 ? mine->size() / rows : 0;
  double agreed[3] = {mine.ok() ? 0.0 : 1.0, static_cast<double>(rows), static_cast<double>(width)};
  RW_RETURN_IF_ERROR(strategy->Reduce(ReduceOp::kMax, agreed, 3));
  double total = static_cast<double>(rows);
  RW_RETURN_IF_ERROR(strategy->Reduce(ReduceOp::kSum, &total, 1));
  if (!mine.ok()) return mine.status();
  if (agreed[0] != 0) {
    return absl::AbortedError("predict: a peer could not predict its share (see its log)");
  }
  const int64_t most = static_cast<int64_t>(agreed[1]);
  const int64_t row_width = static_cast<int64_t>(agreed[2]);
  if (rows > 0 && width != row_width) {
    return absl::InternalError("predict: the workers' models give rows of different widths");
  }
  // Every worker's rows, padded to the most, side by side in rank order.
  std::vector<float> padded(static_cast<size_t>(most * row_width), 0.0f);
  if (rows > 0) std::memcpy(padded.data(), mine->data(), sizeof(float) * mine->size());
  std::vector<float> all(padded.size() * static_cast<size_t>(workers));
  RW_RETURN_IF_ERROR(strategy->communicator()->AllGather(padded.data(), all.data(), padded.size(),
                                                         DataType::kFloat32));
  Shape shape = mine->shape();
  if (shape.empty()) shape = {0};
  shape[0] = static_cast<int64_t>(total);
  if (rows == 0 && row_width > 0 && shape.size() == 1) shape.push_back(row_width);
  Tensor out(shape);
  // Element i was worker (i mod N)'s row i / N.
  for (int64_t i = 0; i < shape[0]; ++i) {
    const float* from = all.data() + ((i % workers) * most + i / workers) * row_width;
    std::copy(from, from + row_width, out.data() + i * row_width);
  }
  return out;
}

}  // namespace ringwork
