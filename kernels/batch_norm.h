// Batch normalization over the rows of a [rows, channels] view (NHWC inputs: every
// position of every example is a row; Keras' BatchNormalization with axis=-1):
//
//   training:  y = gamma * (x - mean_c) / sqrt(var_c + epsilon) + beta    (batch stats)
//   inference: y = gamma * (x - moving_mean_c) / sqrt(moving_var_c + epsilon) + beta
//
//   BatchNormTrain(x, gamma, beta, rows, channels, 1e-3f, y, xhat, rstd, sums);
//   BatchNormBackward(dy, gamma, xhat, rstd, rows, channels, dx, dgamma, dbeta);
//
// `sums` (1 + 2 x channels, double) returns [rows, sum(x) per channel, sum(x^2) per
// channel], which the model adds up over every replica to update the moving
// statistics alike everywhere. Variances are biased (divided by rows). Plain C++ loops with
// double sums, compiled for AVX-512, AVX2 and baseline x86-64 (cpu_isa.h): the same bits
// from each.
#ifndef RINGWORK_KERNELS_BATCH_NORM_H_
#define RINGWORK_KERNELS_BATCH_NORM_H_

#include <cstdint>

#include "kernels/cpu_isa.h"

namespace ringwork {

// xhat: rows x channels; rstd: channels. gamma/beta may be null (1, 0).
void BatchNormTrain(const float* x, const float* gamma, const float* beta, int64_t rows,
                    int64_t channels, float epsilon, float* y, float* xhat, float* rstd,
                    double* sums);

void BatchNormInfer(const float* x, const float* gamma, const float* beta, const float* moving_mean,
                    const float* moving_variance, int64_t rows, int64_t channels, float epsilon,
                    float* y);

// The pieces of a normalization over statistics gathered elsewhere
// (SyncBatchNormalization: over every replica's batch):
// sums = [rows, sum(x) per channel, sum(x^2) per channel] of this batch;
void BatchNormSums(const float* x, int64_t rows, int64_t channels, double* sums);
// mean and rstd per channel from such sums (added over replicas);
void BatchNormStatisticsFromSums(const double* sums, int64_t channels, float epsilon, float* mean,
                                 float* rstd);
// y and xhat of this batch with those statistics.
void BatchNormNormalize(const float* x, const float* gamma, const float* beta, const float* mean,
                        const float* rstd, int64_t rows, int64_t channels, float* y, float* xhat);
// sums = [sum(dy), sum(dy * xhat)] per channel of this batch, times `scale`.
void BatchNormGradientSums(const float* dy, const float* xhat, int64_t rows, int64_t channels,
                           double scale, double* sums);
// dx of this batch (`rows` of them) from gradient sums over every replica (each
// replica's scaled by its share of the rows):
// dx = gamma * rstd / rows * (rows * dy - sum(dy) - xhat * sum(dy * xhat)).
void BatchNormInputGradient(const float* dy, const float* gamma, const float* xhat,
                            const float* rstd, const double* sums, int64_t rows, int64_t channels,
                            float* dx);

// moving = moving * momentum + batch * (1 - momentum) per channel, from `totals`
// = [rows, sum(x) x channels, sum(x^2) x channels] over every replica (nothing when
// rows is 0). Runs after the all-reduce: built without FMA contraction, like the
// optimizers, so every CPU computes the same bits.
void UpdateMovingStatistics(const double* totals, int64_t channels, float momentum,
                            float* moving_mean, float* moving_variance);

// dgamma/dbeta (channels each) are overwritten; any of dx, dgamma, dbeta may be null.
void BatchNormBackward(const float* dy, const float* gamma, const float* xhat, const float* rstd,
                       int64_t rows, int64_t channels, float* dx, float* dgamma, float* dbeta);

// Tests: every call from now on runs the loops compiled for `isa` (which this CPU
// must support) instead of the widest.
void UseBatchNormIsaForTesting(Isa isa);

}  // namespace ringwork

#endif  // RINGWORK_KERNELS_BATCH_NORM_H_
