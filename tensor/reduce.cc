#include "tensor/reduce.h"

#include <algorithm>

#include "base/check.h"

namespace ringwork {
namespace {

struct SumOp {
  template <typename T>
  static T Apply(T a, T b) {
    return a + b;
  }
};
struct MinOp {
  template <typename T>
  static T Apply(T a, T b) {
    return b < a ? b : a;
  }
};
struct MaxOp {
  template <typename T>
  static T Apply(T a, T b) {
    return a < b ? b : a;
  }
};
struct ProductOp {
  template <typename T>
  static T Apply(T a, T b) {
    return a * b;
  }
};

// The hot loops. __restrict lets the compiler vectorise; the AVX-512 and AVX2 clones
// are chosen at load time on CPUs that have them.
template <typename T, typename Op>
void Loop(T* __restrict dst, const T* __restrict src, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = Op::Apply(dst[i], src[i]);
}

template <typename Op>
void LoopBFloat16(uint16_t* __restrict dst, const uint16_t* __restrict src, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    BFloat16 a{dst[i]}, b{src[i]};
    dst[i] = BFloat16::FromFloat(Op::Apply(a.ToFloat(), b.ToFloat())).bits;
  }
}

// (Not under ThreadSanitizer: its runtime is not ready when the loader runs the
// clones' ifunc resolvers, and the process crashes before main.)
#if defined(__SANITIZE_THREAD__)
#define RW_CLONES
#else
#define RW_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif

RW_CLONES void SumF32(float* d, const float* s, size_t n) { Loop<float, SumOp>(d, s, n); }
RW_CLONES void SumF64(double* d, const double* s, size_t n) { Loop<double, SumOp>(d, s, n); }
RW_CLONES void SumBF16(uint16_t* d, const uint16_t* s, size_t n) { LoopBFloat16<SumOp>(d, s, n); }
RW_CLONES void DivideBF16(uint16_t* data, size_t count, float divisor) {
  for (size_t i = 0; i < count; ++i) {
    data[i] = BFloat16::FromFloat(BFloat16{data[i]}.ToFloat() / divisor).bits;
  }
}
RW_CLONES void ToBFloat16(const float* __restrict src, uint16_t* __restrict dst, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = BFloat16::FromFloat(src[i]).bits;
}
RW_CLONES void FromBFloat16(const uint16_t* __restrict src, float* __restrict dst, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = BFloat16{src[i]}.ToFloat();
}
RW_CLONES void SumI32(int32_t* d, const int32_t* s, size_t n) { Loop<int32_t, SumOp>(d, s, n); }
RW_CLONES void SumI64(int64_t* d, const int64_t* s, size_t n) { Loop<int64_t, SumOp>(d, s, n); }

template <typename Op>
void Generic(DataType dtype, void* dst, const void* src, size_t count) {
  switch (dtype) {
    case DataType::kFloat32:
      Loop<float, Op>(static_cast<float*>(dst), static_cast<const float*>(src), count);
      return;
    case DataType::kFloat64:
      Loop<double, Op>(static_cast<double*>(dst), static_cast<const double*>(src), count);
      return;
    case DataType::kBFloat16:
      LoopBFloat16<Op>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count);
      return;
    case DataType::kInt32:
      Loop<int32_t, Op>(static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), count);
      return;
    case DataType::kInt64:
      Loop<int64_t, Op>(static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), count);
      return;
  }
  RW_CHECK(false) << "invalid dtype " << static_cast<int>(dtype);
}

template <typename T>
void Divide(T* data, size_t count, int64_t divisor) {
  const T d = static_cast<T>(divisor);
  for (size_t i = 0; i < count; ++i) data[i] = data[i] / d;
}

}  // namespace

absl::string_view ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kMean:
      return "mean";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kProduct:
      return "product";
  }
  return "invalid";
}

bool IsValidReduceOp(uint8_t value) { return value >= 1 && value <= 5; }

void Accumulate(DataType dtype, ReduceOp op, void* dst, const void* src, size_t count) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kMean:
      switch (dtype) {
        case DataType::kFloat32:
          return SumF32(static_cast<float*>(dst), static_cast<const float*>(src), count);
        case DataType::kFloat64:
          return SumF64(static_cast<double*>(dst), static_cast<const double*>(src), count);
        case DataType::kBFloat16:
          return SumBF16(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count);
        case DataType::kInt32:
          return SumI32(static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), count);
        case DataType::kInt64:
          return SumI64(static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), count);
      }
      break;
    case ReduceOp::kMin:
      return Generic<MinOp>(dtype, dst, src, count);
    case ReduceOp::kMax:
      return Generic<MaxOp>(dtype, dst, src, count);
    case ReduceOp::kProduct:
      return Generic<ProductOp>(dtype, dst, src, count);
  }
  RW_CHECK(false) << "invalid reduce op " << static_cast<int>(op) << " or dtype "
                  << static_cast<int>(dtype);
}

void FinishMean(DataType dtype, void* data, size_t count, int64_t divisor) {
  RW_CHECK_GT(divisor, 0);
  switch (dtype) {
    case DataType::kFloat32:
      return Divide(static_cast<float*>(data), count, divisor);
    case DataType::kFloat64:
      return Divide(static_cast<double*>(data), count, divisor);
    case DataType::kInt32:
      return Divide(static_cast<int32_t*>(data), count, divisor);
    case DataType::kInt64:
      return Divide(static_cast<int64_t*>(data), count, divisor);
    case DataType::kBFloat16:
      return DivideBF16(static_cast<uint16_t*>(data), count, static_cast<float>(divisor));
  }
}

void ConvertToBFloat16(const float* src, BFloat16* dst, size_t count) {
  ToBFloat16(src, reinterpret_cast<uint16_t*>(dst), count);
}

void ConvertFromBFloat16(const BFloat16* src, float* dst, size_t count) {
  FromBFloat16(reinterpret_cast<const uint16_t*>(src), dst, count);
}

void Scale(const float* in, float scale, float* out, size_t count) {
  for (size_t i = 0; i < count; ++i) out[i] = in[i] * scale;
}

}  // namespace ringwork
