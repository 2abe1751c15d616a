#include "data/typed_tensor.h"

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/check.h"

namespace ringwork {

absl::string_view ValueTypeName(ValueType type) {
  switch (type) {
    case ValueType::kFloat32:
      return "float32";
    case ValueType::kInt32:
      return "int32";
    case ValueType::kInt64:
      return "int64";
    case ValueType::kUInt8:
      return "uint8";
    case ValueType::kString:
      return "string";
  }
  return "invalid";
}

size_t ValueTypeSize(ValueType type) {
  switch (type) {
    case ValueType::kFloat32:
    case ValueType::kInt32:
      return 4;
    case ValueType::kInt64:
      return 8;
    case ValueType::kUInt8:
      return 1;
    case ValueType::kString:
      return 0;
  }
  return 0;
}

absl::StatusOr<ValueType> ParseValueType(absl::string_view text) {
  const std::string t = absl::AsciiStrToLower(text);
  if (t == "float32" || t == "float") return ValueType::kFloat32;
  if (t == "int32") return ValueType::kInt32;
  if (t == "int64") return ValueType::kInt64;
  if (t == "uint8") return ValueType::kUInt8;
  if (t == "string" || t == "bytes") return ValueType::kString;
  return absl::InvalidArgumentError(
      absl::StrCat("type \"", text, "\": expected float32, int32, int64, uint8 or string"));
}

TypedTensor::TypedTensor(ValueType type, Shape shape) {
  Reset(type, shape);
  if (bytes() > 0) std::memset(data_.get(), 0, static_cast<size_t>(bytes()));
}

TypedTensor TypedTensor::Strings(std::vector<std::string> values) {
  TypedTensor t;
  t.type_ = ValueType::kString;
  t.shape_ = {static_cast<int64_t>(values.size())};
  t.size_ = static_cast<int64_t>(values.size());
  t.strings_ = std::move(values);
  return t;
}

TypedTensor::TypedTensor(const TypedTensor& other) { *this = other; }

TypedTensor& TypedTensor::operator=(const TypedTensor& other) {
  if (this == &other) return *this;
  Reset(other.type_, other.shape_);
  if (bytes() > 0) std::memcpy(data_.get(), other.data_.get(), static_cast<size_t>(bytes()));
  if (type_ == ValueType::kString) strings_ = other.strings_;
  return *this;
}

void TypedTensor::Reset(ValueType type, const Shape& shape) {
  type_ = type;
  shape_ = shape;
  size_ = NumElements(shape);
  if (type == ValueType::kString) {
    strings_.resize(static_cast<size_t>(size_));
    return;
  }
  // strings_ keeps what it holds (unused by numbers): an element that carries a
  // record and then its parsed features reuses both buffers pass after pass.
  const size_t need = static_cast<size_t>(bytes());
  if (need > capacity_bytes_) {
    // 64-byte aligned, as Tensor's, and at least one line (aligned_alloc(0) is not portable).
    const size_t rounded = ((need + 63) / 64) * 64;
    data_.reset(std::aligned_alloc(64, rounded));
    RW_CHECK(data_ != nullptr) << "out of memory for " << rounded << " bytes";
    capacity_bytes_ = rounded;
  }
}

void TypedTensor::Reshape(Shape shape) {
  RW_CHECK_EQ(NumElements(shape), size_)
      << "reshape " << ShapeString(shape_) << " to " << ShapeString(shape);
  shape_ = std::move(shape);
}

double TypedTensor::ValueAsDouble(int64_t i) const {
  switch (type_) {
    case ValueType::kFloat32:
      return data<float>()[i];
    case ValueType::kInt32:
      return data<int32_t>()[i];
    case ValueType::kInt64:
      return static_cast<double>(data<int64_t>()[i]);
    case ValueType::kUInt8:
      return data<uint8_t>()[i];
    case ValueType::kString:
      break;
  }
  RW_CHECK(false) << "ValueAsDouble of a " << ValueTypeName(type_) << " tensor";
  return 0;
}

absl::Status TypedTensor::ToFloat(Tensor* out) const {
  if (type_ == ValueType::kString) {
    return absl::InvalidArgumentError("strings cannot be a model's numbers");
  }
  out->Resize(shape_);
  float* dst = out->data();
  switch (type_) {
    case ValueType::kFloat32:
      if (size_ > 0) std::memcpy(dst, data_.get(), static_cast<size_t>(bytes()));
      break;
    case ValueType::kInt32:
      for (int64_t i = 0; i < size_; ++i) dst[i] = static_cast<float>(data<int32_t>()[i]);
      break;
    case ValueType::kInt64:
      for (int64_t i = 0; i < size_; ++i) dst[i] = static_cast<float>(data<int64_t>()[i]);
      break;
    case ValueType::kUInt8:
      for (int64_t i = 0; i < size_; ++i) dst[i] = static_cast<float>(data<uint8_t>()[i]);
      break;
    case ValueType::kString:
      break;
  }
  return absl::OkStatus();
}

}  // namespace ringwork
