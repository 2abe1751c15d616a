// 2-D convolution in the user-facing layouts Keras uses, on oneDNN:
//   x [batch, height, width, in_channels] (NHWC)
//   w [kernel_h, kernel_w, in_channels, out_channels] (HWIO), bias [out_channels]
//   y [batch, out_height, out_width, out_channels] (NHWC)
// oneDNN picks its preferred (blocked) weight layouts; the reorders into and out of
// them are created once here and run inside Forward/Backward*, invisible to callers.
//
//   Conv2DShape s{.batch = 64, .height = 28, .width = 28, .in_channels = 1,
//                 .out_channels = 16, .kernel_h = 3, .kernel_w = 3};
//   auto k = Conv2DKernel::Create(ctx, s);
//   (*k)->Forward(ctx, x, w, bias, y);
#ifndef RINGWORK_KERNELS_CONV2D_H_
#define RINGWORK_KERNELS_CONV2D_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "kernels/dnnl_util.h"
#include "kernels/kernel_context.h"
#include "kernels/window.h"

namespace ringwork {

struct Conv2DShape {
  int64_t batch = 0, height = 0, width = 0, in_channels = 0;
  int64_t out_channels = 0, kernel_h = 0, kernel_w = 0;
  int64_t stride_h = 1, stride_w = 1;
  Padding padding = Padding::kValid;
  // Keras' dilation_rate: the kernel's taps d apart, spanning (k - 1) d + 1 inputs.
  int64_t dilation_h = 1, dilation_w = 1;

  Window1D rows() const {
    return ComputeWindow(height, (kernel_h - 1) * dilation_h + 1, stride_h, padding);
  }
  Window1D cols() const {
    return ComputeWindow(width, (kernel_w - 1) * dilation_w + 1, stride_w, padding);
  }
  double ForwardFlops() const {
    return 2.0 * batch * rows().out * cols().out * out_channels * kernel_h * kernel_w * in_channels;
  }
};

class Conv2DKernel {
 public:
  static absl::StatusOr<std::unique_ptr<Conv2DKernel>> Create(KernelContext& ctx,
                                                              Conv2DShape shape);
  const Conv2DShape& shape() const { return shape_; }

  void Forward(KernelContext& ctx, const float* x, const float* w, const float* bias, float* y);
  // Prediction's forward pass (oneDNN's forward_inference), with a ReLU fused in
  // when `relu`: one pass over y instead of two. The primitive is made on the
  // first call. Values equal Forward's (then a ReLU) up to float rounding.
  absl::Status ForwardInference(KernelContext& ctx, const float* x, const float* w,
                                const float* bias, float* y, bool relu);
  void BackwardData(KernelContext& ctx, const float* dy, const float* w, float* dx);
  void BackwardWeights(KernelContext& ctx, const float* x, const float* dy, float* dw,
                       float* dbias);

 private:
  explicit Conv2DKernel(Conv2DShape shape) : shape_(shape) {}
  absl::Status Init(KernelContext& ctx);

  Conv2DShape shape_;
  dnnl::convolution_forward forward_;
  dnnl::convolution_backward_data backward_data_;
  dnnl::convolution_backward_weights backward_weights_;
  Staged fwd_x_, fwd_w_, fwd_bias_, fwd_y_;
  Staged bd_dy_, bd_w_, bd_dx_;
  Staged bw_x_, bw_dy_, bw_dw_, bw_db_;
  // ForwardInference's, made on its first call (`inference_relu_`: with the ReLU).
  std::optional<dnnl::convolution_forward> inference_;
  bool inference_relu_ = false;
  Staged inf_x_, inf_w_, inf_bias_, inf_y_;
};

}  // namespace ringwork

#endif  // RINGWORK_KERNELS_CONV2D_H_
