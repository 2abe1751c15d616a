// A dense float32 tensor in row-major (C) order, 64-byte aligned, that owns its
// storage. Activations are NHWC, Dense kernels are [in, out], Conv2D kernels are
// [kh, kw, in, out], as in Keras. Copyable (deep copy) and movable.
//
//   Tensor x({128, 784});          // zero-filled
//   x.data()[0] = 1.0f;
//   Tensor y = x.Reshaped({128, 28, 28, 1});   // shares nothing: a copy
//   x.Reshape({128, 28, 28, 1});   // in place: same data, new shape
#ifndef RINGWORK_TENSOR_TENSOR_H_
#define RINGWORK_TENSOR_TENSOR_H_

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace ringwork {

using Shape = std::vector<int64_t>;

int64_t NumElements(const Shape& shape);
std::string ShapeString(const Shape& shape);  // "[128, 784]"

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Shape shape);  // Zero-filled.
  Tensor(Shape shape, const std::vector<float>& values);
  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;

  const Shape& shape() const { return shape_; }
  int64_t dim(size_t i) const { return shape_[i]; }
  size_t rank() const { return shape_.size(); }
  int64_t size() const { return size_; }
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  float& operator[](int64_t i) { return data_.get()[i]; }
  float operator[](int64_t i) const { return data_.get()[i]; }

  // Same data, new shape with the same number of elements (checked).
  void Reshape(Shape shape);
  // Resizes to `shape` (contents undefined when the size changes).
  void Resize(const Shape& shape);
  void Fill(float value);
  std::vector<float> ToVector() const;

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  Shape shape_;
  int64_t size_ = 0;
  int64_t capacity_ = 0;
  std::unique_ptr<float, Free> data_;
};

}  // namespace ringwork

#endif  // RINGWORK_TENSOR_TENSOR_H_
