// Keras' preprocessing layers for numbers, inside the model (so a saved model
// carries them):
//
//   std::unique_ptr<Layer> norm = Normalization();
//   auto scope = strategy->scope();
//   RW_RETURN_IF_ERROR(Adapt(*norm, train));  // Each worker reads its share.
//   Sequential model;
//   model.Add(std::move(norm));
//   model.Add(Dense(10));
//
// - Normalization: (x - mean) / max(sqrt(variance), 1e-7) for each feature of the
//   last axis; mean and variance given, or learned by Adapt over the data of every
//   worker (sums all-reduced: every worker holds the statistics of the whole data).
// - Discretization: each value's bucket: how many bin boundaries are <= it.
// - CategoryEncoding: ids in [0, num_tokens) to "one_hot", "multi_hot" or "count"
//   vectors of num_tokens.
// - IntegerLookup: each id's index in the vocabulary plus 1; 0 for an id not in it
//   (Keras' one out-of-vocabulary index, no mask token).
// Outputs are float32 (Keras gives int64 for Discretization and IntegerLookup).
// None has a gradient for its input but Normalization (dy / deviation).
#ifndef RINGWORK_KERAS_PREPROCESSING_H_
#define RINGWORK_KERAS_PREPROCESSING_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "data/dataset.h"
#include "keras/layer.h"

namespace ringwork {

struct NormalizationOptions {
  // One value per feature of the last axis, or one for all; empty: 0 and 1
  // until Adapt.
  std::vector<float> mean, variance;
};
std::unique_ptr<Layer> Normalization(NormalizationOptions options = {});

// Learns a Normalization's mean and variance from `data`'s features: each worker
// of the current strategy's cluster (MultiWorkerMirroredStrategy::Current(); none:
// this process alone) reads examples rank, rank + workers, ...; two all-reduced
// passes (the mean, then the squared deviations from it, in double) give every
// worker the same statistics of the whole data. Call it on every worker.
absl::Status Adapt(Layer& normalization, const Dataset& data);

std::unique_ptr<Layer> Discretization(std::vector<float> bin_boundaries);
std::unique_ptr<Layer> CategoryEncoding(int64_t num_tokens,
                                        const std::string& output_mode = "multi_hot");
std::unique_ptr<Layer> IntegerLookup(std::vector<int64_t> vocabulary);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_PREPROCESSING_H_
