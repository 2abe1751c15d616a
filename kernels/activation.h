// Element-wise activations on oneDNN eltwise primitives, forward and backward:
// ReLU, tanh, sigmoid, GELU (exact, with erf, as Keras' default) and linear.
//
//   auto relu = ActivationKernel::Create(ctx, Activation::kRelu, n);
//   (*relu)->Forward(ctx, x, y);
//   (*relu)->Backward(ctx, x, dy, dx);   // needs the forward input x
#ifndef RINGWORK_KERNELS_ACTIVATION_H_
#define RINGWORK_KERNELS_ACTIVATION_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/dnnl_util.h"
#include "kernels/kernel_context.h"

namespace ringwork {

enum class Activation { kLinear, kRelu, kTanh, kSigmoid, kGelu };

absl::string_view ActivationName(Activation activation);
// "relu", "tanh", "sigmoid", "gelu", "linear" (or "" / "none").
bool ParseActivation(absl::string_view name, Activation* out);

class ActivationKernel {
 public:
  static absl::StatusOr<std::unique_ptr<ActivationKernel>> Create(KernelContext& ctx,
                                                                  Activation activation,
                                                                  int64_t count);
  Activation activation() const { return activation_; }
  void Forward(KernelContext& ctx, const float* x, float* y);
  void Backward(KernelContext& ctx, const float* x, const float* dy, float* dx);

 private:
  ActivationKernel(Activation activation, int64_t count) : activation_(activation), count_(count) {}

  Activation activation_;
  int64_t count_;
  dnnl::eltwise_forward forward_;
  dnnl::eltwise_backward backward_;
  dnnl::memory x_, y_, dy_, dx_;
};

}  // namespace ringwork

#endif  // RINGWORK_KERNELS_ACTIVATION_H_
