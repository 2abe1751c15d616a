// Batch inference over every worker of a cluster: each predicts every N-th
// element of the data (worker r the elements r, r + N, ...), and every worker
// gets all the predictions back, in the data's order, as one tensor.
//
//   auto scope = strategy->scope();
//   RW_ASSIGN_OR_RETURN(Model model, LoadModel("model.keras"));
//   RW_ASSIGN_OR_RETURN(Tensor y, PredictAcrossWorkers(model, files, {.features = {"image"}}));
//   if (strategy->is_chief()) ... write y
//
// `data` is every worker's same unbatched pipeline, in the same order (files
// unshuffled; a batched one is refused); fewer elements than workers is fine.
// The model must be built (LoadModel builds). Collective: every worker calls it. A worker that
// fails makes every worker return an error (its own, or "a peer could not predict"); the
// collectives' deadlines bound the wait for a worker that is gone. Models of
// one output. One worker: Model::Predict.
#ifndef RINGWORK_KERAS_DISTRIBUTED_PREDICT_H_
#define RINGWORK_KERAS_DISTRIBUTED_PREDICT_H_

#include "absl/status/statusor.h"
#include "keras/model.h"

namespace ringwork {

absl::StatusOr<Tensor> PredictAcrossWorkers(Model& model, const Pipeline& data,
                                            const DataBinding& binding = {},
                                            int64_t batch_size = 256);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_DISTRIBUTED_PREDICT_H_
