#include "kernels/conv2d.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace ringwork {
namespace {

// oneDNN's view of a Conv2DShape: dims in its NCHW/OIHW order, strides and pads.
struct Geometry {
  explicit Geometry(const Conv2DShape& s) {
    const Window1D r = s.rows(), c = s.cols();
    src = {s.batch, s.in_channels, s.height, s.width};
    weights = {s.out_channels, s.in_channels, s.kernel_h, s.kernel_w};
    dst = {s.batch, s.out_channels, r.out, c.out};
    strides = {s.stride_h, s.stride_w};
    dilates = {s.dilation_h - 1, s.dilation_w - 1};  // oneDNN counts the gaps.
    pad_l = {r.pad_before, c.pad_before};
    pad_r = {r.pad_after, c.pad_after};
  }
  Dims src, weights, dst, strides, dilates, pad_l, pad_r;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Conv2DKernel>> Conv2DKernel::Create(KernelContext& ctx,
                                                                   Conv2DShape shape) {
  if (shape.batch <= 0 || shape.in_channels <= 0 || shape.out_channels <= 0 ||
      shape.kernel_h <= 0 || shape.kernel_w <= 0 || shape.stride_h <= 0 || shape.stride_w <= 0 ||
      shape.dilation_h <= 0 || shape.dilation_w <= 0 || shape.rows().out <= 0 ||
      shape.cols().out <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("conv2d: a ", shape.kernel_h, "x", shape.kernel_w, " kernel with stride ",
                     shape.stride_h, "x", shape.stride_w, ", dilation ", shape.dilation_h, "x",
                     shape.dilation_w, " and ", PaddingName(shape.padding),
                     " padding does not fit a ", shape.height, "x", shape.width, " input"));
  }
  std::unique_ptr<Conv2DKernel> kernel(new Conv2DKernel(shape));
  RW_RETURN_IF_ERROR(kernel->Init(ctx));
  return kernel;
}

absl::Status Conv2DKernel::Init(KernelContext& ctx) {
  // oneDNN plans its work split for the thread count current at creation.
  KernelContext::ScopedThreads threads(ctx);
  const dnnl::engine& engine = ctx.engine();
  const Conv2DShape& s = shape_;
  const DnnlType f32 = DnnlType::f32;
  const DnnlType in = ctx.bf16() ? DnnlType::bf16 : f32;
  const Geometry g(s);
  const Dims &src_dims = g.src, &w_dims = g.weights, &dst_dims = g.dst;
  const Dims &strides = g.strides, &dilates = g.dilates, &pad_l = g.pad_l, &pad_r = g.pad_r;
  const auto algorithm = dnnl::algorithm::convolution_direct;
  try {
    const auto x_user = Md(src_dims, f32, Tag::nhwc), y_user = Md(dst_dims, f32, Tag::nhwc);
    const auto w_user = Md(w_dims, f32, Tag::hwio), bias = Md({s.out_channels}, f32, Tag::a);
    const auto x_in = Md(src_dims, in, Tag::nhwc), dy_in = Md(dst_dims, in, Tag::nhwc);
    const auto w_any = Md(w_dims, in, Tag::any), dw_any = Md(w_dims, f32, Tag::any);

    dnnl::convolution_forward::primitive_desc fwd(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algorithm, x_in, w_any,
                                        bias, y_user, strides, dilates, pad_l, pad_r),
        engine);
    forward_ = dnnl::convolution_forward(fwd);
    RW_RETURN_IF_ERROR(fwd_x_.Init(engine, x_user, fwd.src_desc(), Staged::kInput));
    RW_RETURN_IF_ERROR(fwd_w_.Init(engine, w_user, fwd.weights_desc(), Staged::kInput));
    RW_RETURN_IF_ERROR(fwd_bias_.Init(engine, bias, fwd.bias_desc(), Staged::kInput));
    RW_RETURN_IF_ERROR(fwd_y_.Init(engine, y_user, fwd.dst_desc(), Staged::kOutput));

    dnnl::convolution_backward_data::primitive_desc bd(
        dnnl::convolution_backward_data::desc(algorithm, x_user, w_any, dy_in, strides, dilates,
                                              pad_l, pad_r),
        engine, fwd);
    backward_data_ = dnnl::convolution_backward_data(bd);
    RW_RETURN_IF_ERROR(bd_dy_.Init(engine, y_user, bd.diff_dst_desc(), Staged::kInput));
    RW_RETURN_IF_ERROR(bd_w_.Init(engine, w_user, bd.weights_desc(), Staged::kInput));
    RW_RETURN_IF_ERROR(bd_dx_.Init(engine, x_user, bd.diff_src_desc(), Staged::kOutput));

    dnnl::convolution_backward_weights::primitive_desc bw(
        dnnl::convolution_backward_weights::desc(algorithm, x_in, dw_any, bias, dy_in, strides,
                                                 dilates, pad_l, pad_r),
        engine, fwd);
    backward_weights_ = dnnl::convolution_backward_weights(bw);
    RW_RETURN_IF_ERROR(bw_x_.Init(engine, x_user, bw.src_desc(), Staged::kInput));
    RW_RETURN_IF_ERROR(bw_dy_.Init(engine, y_user, bw.diff_dst_desc(), Staged::kInput));
    RW_RETURN_IF_ERROR(bw_dw_.Init(engine, w_user, bw.diff_weights_desc(), Staged::kOutput));
    RW_RETURN_IF_ERROR(bw_db_.Init(engine, bias, bw.diff_bias_desc(), Staged::kOutput));
  } catch (const dnnl::error& e) {
    return DnnlError(e, "create the conv2d primitives");
  }
  return absl::OkStatus();
}

void Conv2DKernel::Forward(KernelContext& ctx, const float* x, const float* w, const float* bias,
                           float* y) {
  KernelContext::ScopedThreads threads(ctx);
  dnnl::stream& s = ctx.stream();
  Execute(forward_, s,
          {{DNNL_ARG_SRC, fwd_x_.Input(s, x)},
           {DNNL_ARG_WEIGHTS, fwd_w_.Input(s, w)},
           {DNNL_ARG_BIAS, fwd_bias_.Input(s, bias)},
           {DNNL_ARG_DST, fwd_y_.Output(y)}});
  fwd_y_.FinishOutput(s, y);
}

absl::Status Conv2DKernel::ForwardInference(KernelContext& ctx, const float* x, const float* w,
                                            const float* bias, float* y, bool relu) {
  KernelContext::ScopedThreads threads(ctx);
  if (!inference_.has_value() || inference_relu_ != relu) {
    const dnnl::engine& engine = ctx.engine();
    const DnnlType f32 = DnnlType::f32;
    const DnnlType in = ctx.bf16() ? DnnlType::bf16 : f32;
    const Geometry g(shape_);
    try {
      const auto x_user = Md(g.src, f32, Tag::nhwc), y_user = Md(g.dst, f32, Tag::nhwc);
      const auto w_user = Md(g.weights, f32, Tag::hwio);
      const auto b = Md({shape_.out_channels}, f32, Tag::a);
      dnnl::primitive_attr attr;
      if (relu) {
        dnnl::post_ops ops;
        ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
        attr.set_post_ops(ops);
      }
      dnnl::convolution_forward::primitive_desc fwd(
          dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                          dnnl::algorithm::convolution_direct,
                                          Md(g.src, in, Tag::nhwc), Md(g.weights, in, Tag::any), b,
                                          y_user, g.strides, g.dilates, g.pad_l, g.pad_r),
          attr, engine);
      // The primitive only once its staging is whole: a failure leaves none.
      inference_.reset();
      RW_RETURN_IF_ERROR(inf_x_.Init(engine, x_user, fwd.src_desc(), Staged::kInput));
      RW_RETURN_IF_ERROR(inf_w_.Init(engine, w_user, fwd.weights_desc(), Staged::kInput));
      RW_RETURN_IF_ERROR(inf_bias_.Init(engine, b, fwd.bias_desc(), Staged::kInput));
      RW_RETURN_IF_ERROR(inf_y_.Init(engine, y_user, fwd.dst_desc(), Staged::kOutput));
      inference_ = dnnl::convolution_forward(fwd);
      inference_relu_ = relu;
    } catch (const dnnl::error& e) {
      inference_.reset();
      return DnnlError(e, "create the conv2d inference primitive");
    }
  }
  dnnl::stream& s = ctx.stream();
  Execute(*inference_, s,
          {{DNNL_ARG_SRC, inf_x_.Input(s, x)},
           {DNNL_ARG_WEIGHTS, inf_w_.Input(s, w)},
           {DNNL_ARG_BIAS, inf_bias_.Input(s, bias)},
           {DNNL_ARG_DST, inf_y_.Output(y)}});
  inf_y_.FinishOutput(s, y);
  return absl::OkStatus();
}

void Conv2DKernel::BackwardData(KernelContext& ctx, const float* dy, const float* w, float* dx) {
  KernelContext::ScopedThreads threads(ctx);
  dnnl::stream& s = ctx.stream();
  Execute(backward_data_, s,
          {{DNNL_ARG_DIFF_DST, bd_dy_.Input(s, dy)},
           {DNNL_ARG_WEIGHTS, bd_w_.Input(s, w)},
           {DNNL_ARG_DIFF_SRC, bd_dx_.Output(dx)}});
  bd_dx_.FinishOutput(s, dx);
}

void Conv2DKernel::BackwardWeights(KernelContext& ctx, const float* x, const float* dy, float* dw,
                                   float* dbias) {
  KernelContext::ScopedThreads threads(ctx);
  dnnl::stream& s = ctx.stream();
  Execute(backward_weights_, s,
          {{DNNL_ARG_SRC, bw_x_.Input(s, x)},
           {DNNL_ARG_DIFF_DST, bw_dy_.Input(s, dy)},
           {DNNL_ARG_DIFF_WEIGHTS, bw_dw_.Output(dw)},
           {DNNL_ARG_DIFF_BIAS, bw_db_.Output(dbias)}});
  bw_dw_.FinishOutput(s, dw);
  bw_db_.FinishOutput(s, dbias);
}

}  // namespace ringwork
