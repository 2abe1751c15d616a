#include "tensor/dtype.h"

namespace ringwork {

size_t DataTypeSize(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
    case DataType::kInt32:
      return 4;
    case DataType::kFloat64:
    case DataType::kInt64:
      return 8;
    case DataType::kBFloat16:
      return 2;
  }
  return 0;
}

absl::string_view DataTypeName(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return "float32";
    case DataType::kFloat64:
      return "float64";
    case DataType::kBFloat16:
      return "bfloat16";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
  }
  return "invalid";
}

bool IsValidDataType(uint8_t value) { return value >= 1 && value <= 5; }

}  // namespace ringwork
