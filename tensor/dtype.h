// Element types shared by the kernels, the collectives and checkpoints.
//
//   DataTypeSize(DataType::kBFloat16) == 2;
//   DataTypeName(DataType::kFloat32) == "float32";
//   BFloat16 h = BFloat16::FromFloat(1.5f);  float f = h.ToFloat();
//
// The numeric values are part of the wire format and of checkpoints: never renumber.
#ifndef RINGWORK_TENSOR_DTYPE_H_
#define RINGWORK_TENSOR_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/strings/string_view.h"

namespace ringwork {

enum class DataType : uint8_t {
  kFloat32 = 1,
  kFloat64 = 2,
  kBFloat16 = 3,
  kInt32 = 4,
  kInt64 = 5,
};

size_t DataTypeSize(DataType dtype);
absl::string_view DataTypeName(DataType dtype);
// True for the values above; wire headers and files are checked with it.
bool IsValidDataType(uint8_t value);

// bfloat16: the upper 16 bits of an IEEE float32. Conversions round to nearest
// even and keep NaNs NaN, as TensorFlow's and oneDNN's do.
struct BFloat16 {
  uint16_t bits = 0;

  static BFloat16 FromFloat(float value) {
    uint32_t f;
    std::memcpy(&f, &value, sizeof(f));
    // Without a branch, so that loops over it vectorise.
    const uint32_t rounded = (f + 0x7fffu + ((f >> 16) & 1u)) >> 16;
    const uint32_t quiet_nan = (f >> 16) | 0x0040u;  // NaN: keep it quiet and NaN.
    BFloat16 result;
    result.bits = static_cast<uint16_t>((f & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
    return result;
  }
  float ToFloat() const {
    const uint32_t f = static_cast<uint32_t>(bits) << 16;
    float value;
    std::memcpy(&value, &f, sizeof(value));
    return value;
  }
};
static_assert(sizeof(BFloat16) == 2, "BFloat16 must be two bytes");

template <typename T>
struct DataTypeOf;
template <>
struct DataTypeOf<float> {
  static constexpr DataType value = DataType::kFloat32;
};
template <>
struct DataTypeOf<double> {
  static constexpr DataType value = DataType::kFloat64;
};
template <>
struct DataTypeOf<BFloat16> {
  static constexpr DataType value = DataType::kBFloat16;
};
template <>
struct DataTypeOf<int32_t> {
  static constexpr DataType value = DataType::kInt32;
};
template <>
struct DataTypeOf<int64_t> {
  static constexpr DataType value = DataType::kInt64;
};

}  // namespace ringwork

#endif  // RINGWORK_TENSOR_DTYPE_H_
