// Softmax over the last axis of a [rows, cols] tensor, on oneDNN, forward and
// backward (the backward needs the forward output).
#ifndef RINGWORK_KERNELS_SOFTMAX_H_
#define RINGWORK_KERNELS_SOFTMAX_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "kernels/dnnl_util.h"
#include "kernels/kernel_context.h"

namespace ringwork {

class SoftmaxKernel {
 public:
  static absl::StatusOr<std::unique_ptr<SoftmaxKernel>> Create(KernelContext& ctx, int64_t rows,
                                                               int64_t cols);
  void Forward(KernelContext& ctx, const float* x, float* y);
  void Backward(KernelContext& ctx, const float* y, const float* dy, float* dx);

 private:
  SoftmaxKernel() = default;
  dnnl::softmax_forward forward_;
  dnnl::softmax_backward backward_;
  dnnl::memory x_, y_, dy_, dx_;
};

}  // namespace ringwork

#endif  // RINGWORK_KERNELS_SOFTMAX_H_
