#include "kernels/pooling.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace ringwork {

absl::StatusOr<std::unique_ptr<Pool2DKernel>> Pool2DKernel::Create(KernelContext& ctx,
                                                                   Pool2DShape shape) {
  if (shape.batch <= 0 || shape.channels <= 0 || shape.pool_h <= 0 || shape.pool_w <= 0 ||
      shape.stride_h <= 0 || shape.stride_w <= 0 || shape.rows().out <= 0 ||
      shape.cols().out <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pool2d: a ", shape.pool_h, "x", shape.pool_w, " window with ", PaddingName(shape.padding),
        " padding does not fit a ", shape.height, "x", shape.width, " input"));
  }
  std::unique_ptr<Pool2DKernel> kernel(new Pool2DKernel(shape));
  RW_RETURN_IF_ERROR(kernel->Init(ctx));
  return kernel;
}

absl::Status Pool2DKernel::Init(KernelContext& ctx) {
  // oneDNN plans its work split for the thread count current at creation.
  KernelContext::ScopedThreads threads(ctx);
  const Pool2DShape& s = shape_;
  const Window1D r = s.rows(), c = s.cols();
  const auto algorithm = s.kind == PoolKind::kMax ? dnnl::algorithm::pooling_max
                                                  : dnnl::algorithm::pooling_avg_exclude_padding;
  try {
    const auto x = Md({s.batch, s.channels, s.height, s.width}, DnnlType::f32, Tag::nhwc);
    const auto y = Md({s.batch, s.channels, r.out, c.out}, DnnlType::f32, Tag::nhwc);
    const Dims strides = {s.stride_h, s.stride_w}, kernel = {s.pool_h, s.pool_w};
    const Dims pad_l = {r.pad_before, c.pad_before}, pad_r = {r.pad_after, c.pad_after};
    dnnl::pooling_forward::primitive_desc fwd(
        dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training, algorithm, x, y, strides,
                                    kernel, pad_l, pad_r),
        ctx.engine());
    forward_ = dnnl::pooling_forward(fwd);
    inference_ = dnnl::pooling_forward(dnnl::pooling_forward::primitive_desc(
        dnnl::pooling_forward::desc(dnnl::prop_kind::forward_inference, algorithm, x, y, strides,
                                    kernel, pad_l, pad_r),
        ctx.engine()));
    dnnl::pooling_backward::primitive_desc bwd(
        dnnl::pooling_backward::desc(algorithm, x, y, strides, kernel, pad_l, pad_r), ctx.engine(),
        fwd);
    backward_ = dnnl::pooling_backward(bwd);
    if (s.kind == PoolKind::kMax) workspace_ = dnnl::memory(fwd.workspace_desc(), ctx.engine());
    x_ = dnnl::memory(x, ctx.engine(), DNNL_MEMORY_NONE);
    y_ = dnnl::memory(y, ctx.engine(), DNNL_MEMORY_NONE);
    dy_ = dnnl::memory(y, ctx.engine(), DNNL_MEMORY_NONE);
    dx_ = dnnl::memory(x, ctx.engine(), DNNL_MEMORY_NONE);
  } catch (const dnnl::error& e) {
    return DnnlError(e, "create the pooling primitives");
  }
  return absl::OkStatus();
}

void Pool2DKernel::Forward(KernelContext& ctx, const float* x, float* y) {
  KernelContext::ScopedThreads threads(ctx);
  x_.set_data_handle(const_cast<float*>(x));
  y_.set_data_handle(y);
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, x_}, {DNNL_ARG_DST, y_}};
  if (shape_.kind == PoolKind::kMax) args[DNNL_ARG_WORKSPACE] = workspace_;
  Execute(forward_, ctx.stream(), args);
}

void Pool2DKernel::ForwardInference(KernelContext& ctx, const float* x, float* y) {
  KernelContext::ScopedThreads threads(ctx);
  x_.set_data_handle(const_cast<float*>(x));
  y_.set_data_handle(y);
  Execute(inference_, ctx.stream(), {{DNNL_ARG_SRC, x_}, {DNNL_ARG_DST, y_}});
}

void Pool2DKernel::Backward(KernelContext& ctx, const float* dy, float* dx) {
  KernelContext::ScopedThreads threads(ctx);
  dy_.set_data_handle(const_cast<float*>(dy));
  dx_.set_data_handle(dx);
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_DIFF_DST, dy_}, {DNNL_ARG_DIFF_SRC, dx_}};
  if (shape_.kind == PoolKind::kMax) args[DNNL_ARG_WORKSPACE] = workspace_;
  Execute(backward_, ctx.stream(), args);
}

}  // namespace ringwork
