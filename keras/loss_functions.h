// The losses beside the cross-entropies over class ids (keras/losses.cc calls
// them), over float targets of the output's shape [n, width], each example's loss
// the mean over its `width` values, the batch's the mean over examples (Keras'
// SUM_OVER_BATCH_SIZE), `weights` (one per example, or null) scaling each:
//
//   mean_absolute_error   |p - y|;                gradient sign(p - y) (0 at p = y)
//   huber                 e^2 / 2 for |e| <= delta, else delta (|e| - delta / 2);
//                         gradient e or delta sign(e)   (e = p - y)
//   categorical_crossentropy   -sum_c y_c log q_c over the classes (width), q the
//                         softmax of logits, or probabilities as Keras reads them
//                         (divided by the row's sum, then clipped to [1e-7, 1 - 1e-7]);
//                         label_smoothing: y = y (1 - s) + s / classes
//
//   float loss = ElementwiseLoss(ElementwiseKind::kHuber, out, y, n, width, grad, nullptr);
#ifndef RINGWORK_KERAS_LOSS_FUNCTIONS_H_
#define RINGWORK_KERAS_LOSS_FUNCTIONS_H_

#include <cstdint>

namespace ringwork {

enum class ElementwiseKind { kMeanAbsoluteError, kHuber };

// `grad` (or null) gets d(loss)/d(output).
float ElementwiseLoss(ElementwiseKind kind, const float* output, const float* target, int64_t n,
                      int64_t width, float* grad, const float* weights, float delta = 1.f);

float CategoricalCrossentropy(const float* output, const float* target, int64_t n, int64_t width,
                              bool from_logits, float label_smoothing, float* grad,
                              const float* weights);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_LOSS_FUNCTIONS_H_
