// Dense (fully connected) layer math on oneDNN matmul, forward and backward:
//
//   KernelContext ctx({.intra_op_threads = 1});
//   std::vector<float> x(128 * 784), w(784 * 256), bias(256), y(128 * 256);
//   std::vector<float> dy(128 * 256), dx(128 * 784), dw(784 * 256), dbias(256);
//   RW_ASSIGN_OR_RETURN(std::unique_ptr<DenseKernel> k, DenseKernel::Create(ctx, {128, 784, 256}));
//   k->Forward(ctx, x.data(), w.data(), bias.data(), y.data());
//   k->BackwardData(ctx, dy.data(), w.data(), dx.data());
//   k->BackwardWeights(ctx, x.data(), dy.data(), dw.data(), dbias.data());
//
// y[b, out] = x[b, in] . w[in, out] + bias[out];
// dx = dy . w^T,  dw = x^T . dy,  dbias = sum over b of dy.
//
// Created (validated) once per shape, executed many times. With bfloat16 precision
// the inputs of each matmul are converted to bfloat16 copies (one reorder each) and
// results are float32. Reference twin: reference::DenseForward etc.
#ifndef RINGWORK_KERNELS_DENSE_H_
#define RINGWORK_KERNELS_DENSE_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "kernels/dnnl_util.h"
#include "kernels/kernel_context.h"

namespace ringwork {

struct DenseShape {
  int64_t batch = 0;
  int64_t in = 0;
  int64_t out = 0;
  // Floating-point operations of one forward matmul (the backward has two).
  double ForwardFlops() const { return 2.0 * batch * in * out; }
};

class DenseKernel {
 public:
  static absl::StatusOr<std::unique_ptr<DenseKernel>> Create(KernelContext& ctx, DenseShape shape);
  const DenseShape& shape() const { return shape_; }

  void Forward(KernelContext& ctx, const float* x, const float* w, const float* bias, float* y);
  void BackwardData(KernelContext& ctx, const float* dy, const float* w, float* dx);
  void BackwardWeights(KernelContext& ctx, const float* x, const float* dy, float* dw,
                       float* dbias);

 private:
  explicit DenseKernel(DenseShape shape) : shape_(shape) {}
  absl::Status Init(KernelContext& ctx);

  DenseShape shape_;
  dnnl::matmul forward_, backward_data_, backward_weights_;
  // Forward: x, w in; bias; y out.
  Staged fwd_x_, fwd_w_, fwd_bias_, fwd_y_;
  // Backward data: dy, w^T in; dx out.
  Staged bd_dy_, bd_wt_, bd_dx_;
  // Backward weights: x^T, dy in; dw out.
  Staged bw_xt_, bw_dy_, bw_dw_;
};

}  // namespace ringwork

#endif  // RINGWORK_KERNELS_DENSE_H_
