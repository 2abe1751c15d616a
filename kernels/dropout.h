// Dropout: each element is kept with probability 1 - rate and scaled by
// 1 / (1 - rate) (inverted dropout, as Keras). The mask is a pure function of
// (seed, step, element index), so a run can be repeated exactly.
#ifndef RINGWORK_KERNELS_DROPOUT_H_
#define RINGWORK_KERNELS_DROPOUT_H_

#include <cstdint>

namespace ringwork {

// Writes mask[i] (0 or 1 / (1 - rate)) and y[i] = x[i] * mask[i].
void DropoutForward(const float* x, float* y, float* mask, int64_t count, float rate, uint64_t seed,
                    uint64_t step);
// dx[i] = dy[i] * mask[i].
void DropoutBackward(const float* dy, const float* mask, float* dx, int64_t count);

// A uniform number in [0, 1) from (seed, step, index): SplitMix64 of their mix.
float CounterUniform(uint64_t seed, uint64_t step, uint64_t index);

}  // namespace ringwork

#endif  // RINGWORK_KERNELS_DROPOUT_H_
