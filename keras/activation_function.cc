#include "keras/activation_function.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace ringwork {

void SigmoidInPlace(Tensor* t) {
  for (int64_t i = 0; i < t->size(); ++i) {
    const float z = t->data()[i];
    const float e = std::exp(-std::fabs(z));  // Never overflows.
    t->data()[i] = z >= 0 ? 1.f / (1.f + e) : e / (1.f + e);
  }
}

void SoftmaxInPlace(Tensor* t) {
  const int64_t width = t->rank() > 0 ? t->shape().back() : 1;
  for (int64_t row = 0; width > 0 && row < t->size() / width; ++row) {
    float* z = t->data() + row * width;
    const float top = *std::max_element(z, z + width);
    float sum = 0;
    for (int64_t j = 0; j < width; ++j) sum += z[j] = std::exp(z[j] - top);
    for (int64_t j = 0; j < width; ++j) z[j] /= sum;
  }
}

absl::StatusOr<ActivationFunction> ActivationFunction::Parse(const std::string& name) {
  ActivationFunction f;
  if (name == "softmax") {
    f.name_ = "softmax";
    return f;
  }
  if (!ParseActivation(name, &f.elementwise_)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown activation \"", name,
                     "\"; expected relu, tanh, sigmoid, gelu, softmax or linear"));
  }
  f.name_ = std::string(ActivationName(f.elementwise_));
  return f;
}

absl::Status ActivationFunction::Forward(KernelContext& k, const Tensor& z, Tensor* y) {
  y->Resize(z.shape());
  if (is_linear()) {
    std::copy(z.data(), z.data() + z.size(), y->data());
    return absl::OkStatus();
  }
  if (is_softmax()) {
    const int64_t cols = z.shape().back(), rows = z.size() / cols;
    RW_ASSIGN_OR_RETURN(SoftmaxKernel * kernel, softmax_kernels_->Get(z.size(), [&](int64_t) {
      return SoftmaxKernel::Create(k, rows, cols);
    }));
    kernel->Forward(k, z.data(), y->data());
    return absl::OkStatus();
  }
  RW_ASSIGN_OR_RETURN(ActivationKernel * kernel,
                      elementwise_kernels_->Get(z.size(), [&](int64_t n) {
                        return ActivationKernel::Create(k, elementwise_, n);
                      }));
  kernel->Forward(k, z.data(), y->data());
  return absl::OkStatus();
}

absl::Status ActivationFunction::Backward(KernelContext& k, const Tensor& z, const Tensor& y,
                                          const Tensor& dy, Tensor* dz) {
  dz->Resize(z.shape());
  if (is_linear()) {
    std::copy(dy.data(), dy.data() + dy.size(), dz->data());
    return absl::OkStatus();
  }
  if (is_softmax()) {
    const int64_t cols = z.shape().back(), rows = z.size() / cols;
    RW_ASSIGN_OR_RETURN(SoftmaxKernel * kernel, softmax_kernels_->Get(z.size(), [&](int64_t) {
      return SoftmaxKernel::Create(k, rows, cols);
    }));
    kernel->Backward(k, y.data(), dy.data(), dz->data());
    return absl::OkStatus();
  }
  RW_ASSIGN_OR_RETURN(ActivationKernel * kernel,
                      elementwise_kernels_->Get(z.size(), [&](int64_t n) {
                        return ActivationKernel::Create(k, elementwise_, n);
                      }));
  kernel->Backward(k, z.data(), dy.data(), dz->data());
  return absl::OkStatus();
}

}  // namespace ringwork
