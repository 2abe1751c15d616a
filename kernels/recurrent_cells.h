// One time step of an LSTM or a GRU cell for a batch, element-wise (the matrix
// products around it are the layer's, on oneDNN matmuls), with Keras' gate order:
//
//   LSTM: a = x W + h U + b, gates [i, f, g, o]  (PyTorch's order too)
//         i, f, o = sigmoid; g = tanh; c = f c_prev + i g; h = o tanh(c)
//   GRU:  gates [z, r, h]
//         reset_after (Keras' default; PyTorch's GRU):
//           z = sigmoid(xw_z + hu_z), r = sigmoid(xw_r + hu_r)
//           hh = tanh(xw_h + r * hu_h)            (hu = h U + recurrent bias)
//         else (TF.js' GRU): hh = tanh(xw_h + (r * h_prev) U_h)
//         h = z h_prev + (1 - z) hh
//
//   LstmStepForward(batch, units, a, c_prev, act, c, tanh_c, h);
//   LstmStepBackward(batch, units, dh, dc_next, act, c_prev, tanh_c, da, dc_prev);
//
// Buffers are row-major [batch, units] or [batch, gates x units].
#ifndef RINGWORK_KERNELS_RECURRENT_CELLS_H_
#define RINGWORK_KERNELS_RECURRENT_CELLS_H_

#include <cstdint>

namespace ringwork {

// `a` (pre-activations, [B, 4U]) in; `act` (activated gates), `c`, `tanh_c`, `h` out.
void LstmStepForward(int64_t batch, int64_t units, const float* a, const float* c_prev, float* act,
                     float* c, float* tanh_c, float* h);
// `dh` (this step's output gradient, including the next step's), `dc_next` in;
// `da` ([B, 4U]) and `dc_prev` out.
void LstmStepBackward(int64_t batch, int64_t units, const float* dh, const float* dc_next,
                      const float* act, const float* c_prev, const float* tanh_c, float* da,
                      float* dc_prev);

// z and r from xw ([B, 3U], input bias included) and hu ([B, 3U]: h_prev U, plus
// the recurrent bias with reset_after); `act` ([B, 3U]) gets z, r and, once
// GruCandidate ran, hh.
void GruGates(int64_t batch, int64_t units, const float* xw, const float* hu, float* act);
// hh = tanh(xw_h + recurrent), recurrent: r * hu_h (reset_after) or (r h_prev) U_h,
// [B, U] with row stride `recurrent_stride`; then h.
void GruCandidate(int64_t batch, int64_t units, const float* xw, const float* recurrent,
                  int64_t recurrent_stride, bool multiply_by_r, const float* h_prev, float* act,
                  float* h);
// From dh: the gradients of the pre-activations of z and hh. `da` ([B, 3U]) gets
// [da_z, 0, da_hh] (da_r once dr is known: GruResetBackward); `dh_prev` gets dh z
// (the direct path).
void GruStepBackward(int64_t batch, int64_t units, const float* dh, const float* act,
                     const float* h_prev, float* da, float* dh_prev);
// da_r = dr r (1 - r), dr ([B, U], row stride `dr_stride`): da_hh hu_h with
// reset_after, d(r h_prev) h_prev without.
void GruResetBackward(int64_t batch, int64_t units, const float* dr, int64_t dr_stride,
                      const float* act, float* da);

}  // namespace ringwork

#endif  // RINGWORK_KERNELS_RECURRENT_CELLS_H_
