// Losses with their gradients, as Keras computes them (mean over the batch):
//
//   std::vector<float> logits(64 * 10), probs(64 * 10), dlogits(64 * 10);
//   std::vector<int32_t> labels(64);
//   RW_ASSIGN_OR_RETURN(float loss, SoftmaxCrossEntropy(logits.data(), labels.data(), 64, 10,
//                                                      probs.data(), dlogits.data()));
//
//   SoftmaxCrossEntropy  sparse categorical cross-entropy from logits, fused with
//                        the softmax: loss = mean_b -log softmax(logits_b)[label_b],
//                        dlogits = (softmax - onehot) / batch
//   MeanSquaredError     loss = mean (pred - target)^2, dpred = 2 (pred - target) / n
//   BinaryCrossEntropy   from probabilities (clipped to [1e-7, 1 - 1e-7], as Keras)
//                        or from logits
//
// Gradients are written when the output pointer is not null. A label outside
// [0, classes) is an error naming the row, not a crash. With `weights` (one per
// example, Keras' sample_weight; each covers `per_weight` consecutive values of
// MeanSquaredError and BinaryCrossEntropy) each example's loss and gradient are
// scaled by its weight and the mean stays over the examples (Keras'
// SUM_OVER_BATCH_SIZE).
#ifndef RINGWORK_KERNELS_LOSSES_H_
#define RINGWORK_KERNELS_LOSSES_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace ringwork {

absl::StatusOr<float> SoftmaxCrossEntropy(const float* logits, const int32_t* labels, int64_t batch,
                                          int64_t classes, float* probs, float* dlogits,
                                          const float* weights = nullptr);

float MeanSquaredError(const float* pred, const float* target, int64_t count, float* dpred,
                       const float* weights = nullptr, int64_t per_weight = 1);

float BinaryCrossEntropy(const float* pred, const float* target, int64_t count, bool from_logits,
                         float* dpred, const float* weights = nullptr, int64_t per_weight = 1);

}  // namespace ringwork

#endif  // RINGWORK_KERNELS_LOSSES_H_
