// Layer normalization over the last axis (Ba et al.; Keras' LayerNormalization):
// each of `rows` vectors of `dim` values is normalized to zero mean and unit
// variance, then scaled by gamma and shifted by beta:
//
//   y = gamma * (x - mean) / sqrt(var + epsilon) + beta      (per row)
//
//   LayerNormForward(x, gamma, beta, rows, dim, 1e-3f, y, xhat, rstd);
//   LayerNormBackward(dy, gamma, xhat, rstd, rows, dim, dx, dgamma, dbeta);
//
// Plain C++ (oneDNN's primitive wants a fixed batch per kernel and gives no speed
// at these sizes); means and variances are summed in double. The backward pass
// needs the forward's normalized values and reciprocal deviations.
#ifndef RINGWORK_KERNELS_LAYER_NORM_H_
#define RINGWORK_KERNELS_LAYER_NORM_H_

#include <cstdint>

namespace ringwork {

// xhat: rows x dim; rstd: rows. gamma/beta may be null (scale 1, shift 0).
void LayerNormForward(const float* x, const float* gamma, const float* beta, int64_t rows,
                      int64_t dim, float epsilon, float* y, float* xhat, float* rstd);

// dgamma/dbeta (dim each) are overwritten; either may be null. dx may be null.
void LayerNormBackward(const float* dy, const float* gamma, const float* xhat, const float* rstd,
                       int64_t rows, int64_t dim, float* dx, float* dgamma, float* dbeta);

}  // namespace ringwork

#endif  // RINGWORK_KERNELS_LAYER_NORM_H_
