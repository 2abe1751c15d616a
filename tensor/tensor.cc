#include "tensor/tensor.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "base/check.h"

namespace ringwork {
namespace {

float* Allocate(int64_t count) {
  const size_t bytes =
      ((static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(float) + 63) / 64) * 64;
  void* p = std::aligned_alloc(64, bytes);
  RW_CHECK(p != nullptr) << "out of memory allocating " << bytes << " bytes";
  return static_cast<float*>(p);
}

}  // namespace

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeString(const Shape& shape) { return "[" + absl::StrJoin(shape, ", ") + "]"; }

Tensor::Tensor(Shape shape) : shape_(std::move(shape)) {
  for (int64_t d : shape_) RW_CHECK_GE(d, 0);
  size_ = capacity_ = NumElements(shape_);
  data_.reset(Allocate(size_));
  std::memset(data_.get(), 0, sizeof(float) * static_cast<size_t>(size_));
}

Tensor::Tensor(Shape shape, const std::vector<float>& values) : Tensor(std::move(shape)) {
  RW_CHECK_EQ(static_cast<int64_t>(values.size()), size_);
  std::copy(values.begin(), values.end(), data_.get());
}

Tensor::Tensor(const Tensor& other) {
  if (other.data_ == nullptr) return;  // A default (empty) tensor copies as one.
  shape_ = other.shape_;
  size_ = capacity_ = other.size_;
  data_.reset(Allocate(size_));
  if (size_ > 0) std::memcpy(data_.get(), other.data(), sizeof(float) * static_cast<size_t>(size_));
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this == &other) return *this;
  if (other.data_ == nullptr) {
    *this = Tensor();
    return *this;
  }
  Resize(other.shape_);
  if (size_ > 0) std::memcpy(data_.get(), other.data(), sizeof(float) * static_cast<size_t>(size_));
  return *this;
}

void Tensor::Reshape(Shape shape) {
  RW_CHECK_EQ(NumElements(shape), size_)
      << "reshape " << ShapeString(shape_) << " to " << ShapeString(shape);
  shape_ = std::move(shape);
}

void Tensor::Resize(const Shape& shape) {
  const int64_t size = NumElements(shape);
  if (size > capacity_ || data_ == nullptr) {
    data_.reset(Allocate(size));
    capacity_ = size;
  }
  shape_ = shape;
  size_ = size;
}

void Tensor::Fill(float value) { std::fill(data_.get(), data_.get() + size_, value); }

std::vector<float> Tensor::ToVector() const {
  return std::vector<float>(data_.get(), data_.get() + size_);
}

}  // namespace ringwork
