// Scaled dot-product attention of every example and head, over projections laid
// out as MultiHeadAttention's matmuls give them: q and k [batch x steps, heads x
// key_dim], v [batch x steps, heads x value_dim] (head h at columns h x dim).
//
//   AttentionForward(shape, q, k, v, probabilities, context);
//   AttentionBackward(shape, q, k, v, probabilities, dcontext, dq, dk, dv);
//
// probabilities [batch, heads, steps, steps]: softmax over the keys of
// q_i . k_j / sqrt(key_dim); context like v: sum_j p_ij v_j per head. A key mask
// ([batch, steps], 0 for padding) adds -1e9 to the scores of masked keys, as
// Keras' softmax with a mask: they get no weight. The loops
// run along contiguous rows (no reductions in the inner loops), so they vectorize.
#ifndef RINGWORK_KERNELS_ATTENTION_H_
#define RINGWORK_KERNELS_ATTENTION_H_

#include <cstdint>

namespace ringwork {

struct AttentionShape {
  int64_t batch = 0, steps = 0, heads = 0, key_dim = 0, value_dim = 0;
};

void AttentionForward(const AttentionShape& s, const float* q, const float* k, const float* v,
                      float* probabilities, float* context, const uint8_t* key_mask = nullptr);
// dq, dk, dv are overwritten.
void AttentionBackward(const AttentionShape& s, const float* q, const float* k, const float* v,
                       const float* probabilities, const float* dcontext, float* dq, float* dk,
                       float* dv);

}  // namespace ringwork

#endif  // RINGWORK_KERNELS_ATTENTION_H_
