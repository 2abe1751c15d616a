#include "runtime/collectives/expectations.h"

#include <cstring>

namespace ringwork {
namespace {

void Store(DataType dtype, void* data, size_t i, double value) {
  switch (dtype) {
    case DataType::kFloat32:
      static_cast<float*>(data)[i] = static_cast<float>(value);
      return;
    case DataType::kFloat64:
      static_cast<double*>(data)[i] = value;
      return;
    case DataType::kBFloat16:
      static_cast<BFloat16*>(data)[i] = BFloat16::FromFloat(static_cast<float>(value));
      return;
    case DataType::kInt32:
      static_cast<int32_t*>(data)[i] = static_cast<int32_t>(value);
      return;
    case DataType::kInt64:
      static_cast<int64_t*>(data)[i] = static_cast<int64_t>(value);
      return;
  }
}

}  // namespace

int64_t Contribution(ReduceOp op, int rank, size_t index) {
  if (op == ReduceOp::kProduct) {
    // Magnitudes stay <= 2^p: exact in bfloat16 up to p = 7 and beyond.
    switch ((static_cast<size_t>(rank) * 5 + index) % 4) {
      case 0:
        return 2;
      case 1:
        return -1;
      default:
        return 1;
    }
  }
  return static_cast<int64_t>((static_cast<size_t>(rank) * 7 + index * 3) % 17) - 8;
}

void FillContribution(DataType dtype, ReduceOp op, void* data, size_t count, int rank,
                      size_t first_index) {
  for (size_t i = 0; i < count; ++i) {
    Store(dtype, data, i, static_cast<double>(Contribution(op, rank, first_index + i)));
  }
}

std::vector<uint8_t> ExpectedAllReduce(DataType dtype, ReduceOp op, size_t count, int world_size,
                                       size_t first_index) {
  std::vector<uint8_t> out(count * DataTypeSize(dtype));
  for (size_t i = 0; i < count; ++i) {
    int64_t acc = Contribution(op, 0, first_index + i);
    for (int r = 1; r < world_size; ++r) {
      const int64_t v = Contribution(op, r, first_index + i);
      switch (op) {
        case ReduceOp::kSum:
        case ReduceOp::kMean:
          acc += v;
          break;
        case ReduceOp::kMin:
          acc = std::min(acc, v);
          break;
        case ReduceOp::kMax:
          acc = std::max(acc, v);
          break;
        case ReduceOp::kProduct:
          acc *= v;
          break;
      }
    }
    Store(dtype, out.data(), i, static_cast<double>(acc));
    if (op == ReduceOp::kMean) {
      // Divide the way the kernels do, in the element type.
      FinishMean(dtype, out.data() + i * DataTypeSize(dtype), 1, world_size);
    }
  }
  return out;
}

std::vector<uint8_t> ExpectedAllGather(DataType dtype, size_t count, int world_size) {
  const size_t element = DataTypeSize(dtype);
  std::vector<uint8_t> out(count * world_size * element);
  for (int r = 0; r < world_size; ++r) {
    FillContribution(dtype, ReduceOp::kSum, out.data() + r * count * element, count, r);
  }
  return out;
}

size_t CountWrong(DataType dtype, const void* got, const void* expected, size_t count) {
  const size_t element = DataTypeSize(dtype);
  const uint8_t* a = static_cast<const uint8_t*>(got);
  const uint8_t* b = static_cast<const uint8_t*>(expected);
  // Right results are the common case: one comparison of the whole buffer (an
  // element at a time, a large all-reduce's check took longer than the all-reduce).
  if (std::memcmp(a, b, count * element) == 0) return 0;
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    if (std::memcmp(a + i * element, b + i * element, element) != 0) ++wrong;
  }
  return wrong;
}

}  // namespace ringwork
