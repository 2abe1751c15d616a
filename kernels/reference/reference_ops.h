// Plain C++ twins of every optimised kernel, written for clarity (nested loops,
// double accumulation), against which the oneDNN kernels are tested.
#ifndef RINGWORK_KERNELS_REFERENCE_REFERENCE_OPS_H_
#define RINGWORK_KERNELS_REFERENCE_REFERENCE_OPS_H_

#include <cstdint>

#include "kernels/activation.h"
#include "kernels/conv2d.h"
#include "kernels/optimizers.h"
#include "kernels/pooling.h"

namespace ringwork {
namespace reference {

void DenseForward(const float* x, const float* w, const float* bias, float* y, int64_t m, int64_t k,
                  int64_t n);
void DenseBackwardData(const float* dy, const float* w, float* dx, int64_t m, int64_t k, int64_t n);
void DenseBackwardWeights(const float* x, const float* dy, float* dw, float* dbias, int64_t m,
                          int64_t k, int64_t n);

void Conv2DForward(const Conv2DShape& s, const float* x, const float* w, const float* bias,
                   float* y);
void Conv2DBackwardData(const Conv2DShape& s, const float* dy, const float* w, float* dx);
void Conv2DBackwardWeights(const Conv2DShape& s, const float* x, const float* dy, float* dw,
                           float* dbias);

void Pool2DForward(const Pool2DShape& s, const float* x, float* y);
// Max pooling sends each gradient to the first maximum of its window.
void Pool2DBackward(const Pool2DShape& s, const float* x, const float* dy, float* dx);

void ActivationForward(Activation a, const float* x, float* y, int64_t n);
void ActivationBackward(Activation a, const float* x, const float* dy, float* dx, int64_t n);

void SoftmaxForward(const float* x, float* y, int64_t rows, int64_t cols);
void SoftmaxBackward(const float* y, const float* dy, float* dx, int64_t rows, int64_t cols);

void SgdUpdate(const SgdOptions& o, double* param, const double* grad, double* velocity, int64_t n);
void RmspropUpdate(const RmspropOptions& o, double* param, const double* grad, double* velocity,
                   double* momentum, int64_t n);
void AdagradUpdate(const AdagradOptions& o, double* param, const double* grad, double* accumulator,
                   int64_t n);
void AdamUpdate(const AdamOptions& o, int64_t step, double* param, const double* grad, double* m,
                double* v, int64_t n);

}  // namespace reference
}  // namespace ringwork

#endif  // RINGWORK_KERNELS_REFERENCE_REFERENCE_OPS_H_
