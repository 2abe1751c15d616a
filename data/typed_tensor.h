// A feature's values as an input pipeline carries them: a typed, shaped array
// (float32, int32, int64, uint8) or strings, for one element or a batch of them
// (then with a leading dimension). Owns its storage, 64-byte aligned; copyable.
//
//   TypedTensor ids(ValueType::kInt64, {3});
//   ids.data<int64_t>()[0] = 17;
//   TypedTensor text = TypedTensor::Strings({"a", "b"});   // shape [2]
//   absl::StatusOr<ValueType> t = ParseValueType("uint8");
//
// The model's math is float32 (Tensor): ToFloat converts a feature's numbers.
#ifndef RINGWORK_DATA_TYPED_TENSOR_H_
#define RINGWORK_DATA_TYPED_TENSOR_H_

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tensor/tensor.h"

namespace ringwork {

enum class ValueType : uint8_t { kFloat32, kInt32, kInt64, kUInt8, kString };
absl::string_view ValueTypeName(ValueType type);  // "float32", ..., "string"
// Bytes of one value; 0 for strings.
size_t ValueTypeSize(ValueType type);
// "float32" (or "float"), "int32", "int64", "uint8", "string" (or "bytes").
absl::StatusOr<ValueType> ParseValueType(absl::string_view text);

class TypedTensor {
 public:
  TypedTensor() = default;
  TypedTensor(ValueType type, Shape shape);  // Zero-filled (empty strings).
  static TypedTensor Strings(std::vector<std::string> values);
  TypedTensor(const TypedTensor& other);
  TypedTensor& operator=(const TypedTensor& other);
  TypedTensor(TypedTensor&&) noexcept = default;
  TypedTensor& operator=(TypedTensor&&) noexcept = default;

  ValueType type() const { return type_; }
  const Shape& shape() const { return shape_; }
  int64_t size() const { return size_; }  // Values (not bytes).
  int64_t bytes() const { return size_ * static_cast<int64_t>(ValueTypeSize(type_)); }
  template <typename T>
  T* data() {
    return reinterpret_cast<T*>(data_.get());
  }
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(data_.get());
  }
  void* raw() { return data_.get(); }
  const void* raw() const { return data_.get(); }
  std::vector<std::string>& strings() { return strings_; }
  const std::vector<std::string>& strings() const { return strings_; }

  // Resizes to `type` and `shape` (contents undefined when the size changes;
  // storage is kept when it fits).
  void Reset(ValueType type, const Shape& shape);
  // Same values, a new shape of the same number of values (checked).
  void Reshape(Shape shape);
  // Value i as a double (numbers only).
  double ValueAsDouble(int64_t i) const;
  // Into `out` as float32, shape kept; INVALID_ARGUMENT for strings.
  absl::Status ToFloat(Tensor* out) const;

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  ValueType type_ = ValueType::kFloat32;
  Shape shape_;
  int64_t size_ = 0;
  size_t capacity_bytes_ = 0;
  std::unique_ptr<void, Free> data_;
  std::vector<std::string> strings_;  // kString only.
};

}  // namespace ringwork

#endif  // RINGWORK_DATA_TYPED_TENSOR_H_
