#include "kernels/softmax.h"

namespace ringwork {

absl::StatusOr<std::unique_ptr<SoftmaxKernel>> SoftmaxKernel::Create(KernelContext& ctx,
                                                                     int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) return absl::InvalidArgumentError("softmax of an empty tensor");
  std::unique_ptr<SoftmaxKernel> kernel(new SoftmaxKernel());
  // oneDNN plans its work split for the thread count current at creation.
  KernelContext::ScopedThreads threads(ctx);
  try {
    const auto md = Md({rows, cols}, DnnlType::f32, Tag::ab);
    dnnl::softmax_forward::primitive_desc fwd(
        dnnl::softmax_forward::desc(dnnl::prop_kind::forward_training, md, 1), ctx.engine());
    kernel->forward_ = dnnl::softmax_forward(fwd);
    dnnl::softmax_backward::primitive_desc bwd(dnnl::softmax_backward::desc(md, md, 1),
                                               ctx.engine(), fwd);
    kernel->backward_ = dnnl::softmax_backward(bwd);
    for (dnnl::memory* m : {&kernel->x_, &kernel->y_, &kernel->dy_, &kernel->dx_}) {
      *m = dnnl::memory(md, ctx.engine(), DNNL_MEMORY_NONE);
    }
  } catch (const dnnl::error& e) {
    return DnnlError(e, "create the softmax primitives");
  }
  return kernel;
}

void SoftmaxKernel::Forward(KernelContext& ctx, const float* x, float* y) {
  KernelContext::ScopedThreads threads(ctx);
  x_.set_data_handle(const_cast<float*>(x));
  y_.set_data_handle(y);
  Execute(forward_, ctx.stream(), {{DNNL_ARG_SRC, x_}, {DNNL_ARG_DST, y_}});
}

void SoftmaxKernel::Backward(KernelContext& ctx, const float* y, const float* dy, float* dx) {
  KernelContext::ScopedThreads threads(ctx);
  y_.set_data_handle(const_cast<float*>(y));
  dy_.set_data_handle(const_cast<float*>(dy));
  dx_.set_data_handle(dx);
  Execute(backward_, ctx.stream(),
          {{DNNL_ARG_DST, y_}, {DNNL_ARG_DIFF_DST, dy_}, {DNNL_ARG_DIFF_SRC, dx_}});
}

}  // namespace ringwork
