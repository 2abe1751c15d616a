// Plain C++ twins of the sequence kernels (kernels/recurrent_cells.h, one step of
// an LSTM or GRU cell; kernels/attention.h, scaled dot-product attention), written
// from the math with exact functions and double accumulation, against which the
// optimised kernels are tested. Same arguments and layouts as the kernels'.
//
//   reference::LstmStepForward(batch, units, a, c_prev, act, c, tanh_c, h);
//   reference::AttentionForward(shape, q, k, v, probabilities, context, key_mask);
#ifndef RINGWORK_KERNELS_REFERENCE_SEQUENCE_REFERENCE_H_
#define RINGWORK_KERNELS_REFERENCE_SEQUENCE_REFERENCE_H_

#include <cstdint>

#include "kernels/attention.h"

namespace ringwork {
namespace reference {

void LstmStepForward(int64_t batch, int64_t units, const float* a, const float* c_prev, float* act,
                     float* c, float* tanh_c, float* h);
void LstmStepBackward(int64_t batch, int64_t units, const float* dh, const float* dc_next,
                      const float* act, const float* c_prev, const float* tanh_c, float* da,
                      float* dc_prev);

// GruGates then GruCandidate: z, r, hh into `act`, the new state into `h`.
void GruStepForward(int64_t batch, int64_t units, const float* xw, const float* hu,
                    const float* recurrent, int64_t recurrent_stride, bool multiply_by_r,
                    const float* h_prev, float* act, float* h);
// GruStepBackward then GruResetBackward: every gate's pre-activation gradient.
void GruStepBackward(int64_t batch, int64_t units, const float* dh, const float* act,
                     const float* h_prev, const float* dr, int64_t dr_stride, float* da,
                     float* dh_prev);

void AttentionForward(const AttentionShape& s, const float* q, const float* k, const float* v,
                      float* probabilities, float* context, const uint8_t* key_mask = nullptr);
void AttentionBackward(const AttentionShape& s, const float* q, const float* k, const float* v,
                       const float* probabilities, const float* dcontext, float* dq, float* dk,
                       float* dv);

}  // namespace reference
}  // namespace ringwork

#endif  // RINGWORK_KERNELS_REFERENCE_SEQUENCE_REFERENCE_H_
