// Element-wise reductions: the reduction step of every all-reduce, and gradient
// accumulation. Pure math over raw buffers; knows nothing of the network.
//
//   Accumulate(DataType::kFloat32, ReduceOp::kSum, dst, src, n);   // dst[i] += src[i]
//   FinishMean(DataType::kFloat32, dst, n, world_size);            // dst[i] /= world
//
// kMean accumulates as kSum; FinishMean divides once at the end (integer types
// truncate toward zero, as C++ division does). bfloat16 is widened to float32 for
// each operation and rounded back to nearest even.
#ifndef RINGWORK_TENSOR_REDUCE_H_
#define RINGWORK_TENSOR_REDUCE_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "tensor/dtype.h"

namespace ringwork {

// Numeric values are part of the wire format: never renumber.
enum class ReduceOp : uint8_t {
  kSum = 1,
  kMean = 2,
  kMin = 3,
  kMax = 4,
  kProduct = 5,
};

absl::string_view ReduceOpName(ReduceOp op);
bool IsValidReduceOp(uint8_t value);

// dst[i] = dst[i] (op) src[i] for i < count. dst and src must not overlap.
void Accumulate(DataType dtype, ReduceOp op, void* dst, const void* src, size_t count);

// For kMean: data[i] /= divisor.
void FinishMean(DataType dtype, void* data, size_t count, int64_t divisor);

// dst[i] = src[i] rounded to nearest even (BFloat16::FromFloat), and back; for
// gradients that travel as bfloat16. src and dst must not overlap.
void ConvertToBFloat16(const float* src, BFloat16* dst, size_t count);
void ConvertFromBFloat16(const BFloat16* src, float* dst, size_t count);

// out[i] = in[i] * scale, in float32 (in and out may alias).
void Scale(const float* in, float scale, float* out, size_t count);

}  // namespace ringwork

#endif  // RINGWORK_TENSOR_REDUCE_H_
