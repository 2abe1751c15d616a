// 2-D max and average pooling over NHWC tensors, on oneDNN, forward and backward.
// Average pooling with "same" padding divides by the number of real (not padded)
// elements, as Keras does. Max pooling keeps oneDNN's workspace (where each maximum
// was) from Forward for Backward, so the two must run in that order.
#ifndef RINGWORK_KERNELS_POOLING_H_
#define RINGWORK_KERNELS_POOLING_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "kernels/dnnl_util.h"
#include "kernels/kernel_context.h"
#include "kernels/window.h"

namespace ringwork {

enum class PoolKind { kMax, kAverage };

struct Pool2DShape {
  PoolKind kind = PoolKind::kMax;
  int64_t batch = 0, height = 0, width = 0, channels = 0;
  int64_t pool_h = 2, pool_w = 2, stride_h = 2, stride_w = 2;
  Padding padding = Padding::kValid;

  Window1D rows() const { return ComputeWindow(height, pool_h, stride_h, padding); }
  Window1D cols() const { return ComputeWindow(width, pool_w, stride_w, padding); }
};

class Pool2DKernel {
 public:
  static absl::StatusOr<std::unique_ptr<Pool2DKernel>> Create(KernelContext& ctx,
                                                              Pool2DShape shape);
  const Pool2DShape& shape() const { return shape_; }
  void Forward(KernelContext& ctx, const float* x, float* y);
  // Prediction's forward pass (forward_inference): the same values, without the
  // workspace a max pool's backward pass needs.
  void ForwardInference(KernelContext& ctx, const float* x, float* y);
  void Backward(KernelContext& ctx, const float* dy, float* dx);

 private:
  explicit Pool2DKernel(Pool2DShape shape) : shape_(shape) {}
  absl::Status Init(KernelContext& ctx);

  Pool2DShape shape_;
  dnnl::pooling_forward forward_, inference_;
  dnnl::pooling_backward backward_;
  dnnl::memory workspace_;  // Max pooling only.
  dnnl::memory x_, y_, dy_, dx_;
};

}  // namespace ringwork

#endif  // RINGWORK_KERNELS_POOLING_H_
