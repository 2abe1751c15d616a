#include "kernels/dense.h"

#include <algorithm>

#include "base/status_macros.h"

namespace ringwork {

absl::StatusOr<std::unique_ptr<DenseKernel>> DenseKernel::Create(KernelContext& ctx,
                                                                 DenseShape shape) {
  if (shape.batch <= 0 || shape.in <= 0 || shape.out <= 0) {
    return absl::InvalidArgumentError("dense shape must be positive");
  }
  std::unique_ptr<DenseKernel> kernel(new DenseKernel(shape));
  RW_RETURN_IF_ERROR(kernel->Init(ctx));
  return kernel;
}

absl::Status DenseKernel::Init(KernelContext& ctx) {
  // oneDNN plans its work split for the thread count current at creation.
  KernelContext::ScopedThreads threads(ctx);
  const dnnl::engine& engine = ctx.engine();
  const int64_t m = shape_.batch, k = shape_.in, n = shape_.out;
  const DnnlType f32 = DnnlType::f32;
  const DnnlType in = ctx.bf16() ? DnnlType::bf16 : f32;
  try {
    // User tensors, all float32 and row-major. Transposed views via strides.
    const auto x = Md({m, k}, f32, Tag::ab), xt = Md({k, m}, f32, Tag::ba);
    const auto w = Md({k, n}, f32, Tag::ab), wt = Md({n, k}, f32, Tag::ba);
    const auto y = Md({m, n}, f32, Tag::ab), bias = Md({1, n}, f32, Tag::ab);
    const auto dx = Md({m, k}, f32, Tag::ab), dw = Md({k, n}, f32, Tag::ab);
    // What the matmuls read: bfloat16 copies are made row-major (transposing while
    // converting costs nothing extra).
    const auto x_in = Md({m, k}, in, Tag::ab),
               xt_in = Md({k, m}, in, ctx.bf16() ? Tag::ab : Tag::ba);
    const auto w_in = Md({k, n}, in, Tag::ab),
               wt_in = Md({n, k}, in, ctx.bf16() ? Tag::ab : Tag::ba);
    const auto dy_in = Md({m, n}, in, Tag::ab);

    dnnl::matmul::primitive_desc fwd(dnnl::matmul::desc(x_in, w_in, bias, y), engine);
    forward_ = dnnl::matmul(fwd);
    RW_RETURN_IF_ERROR(fwd_x_.Init(engine, x, x_in, Staged::kInput));
    RW_RETURN_IF_ERROR(fwd_w_.Init(engine, w, w_in, Staged::kInput));
    RW_RETURN_IF_ERROR(fwd_bias_.Init(engine, bias, bias, Staged::kInput));
    RW_RETURN_IF_ERROR(fwd_y_.Init(engine, y, y, Staged::kOutput));

    dnnl::matmul::primitive_desc bd(dnnl::matmul::desc(dy_in, wt_in, dx), engine);
    backward_data_ = dnnl::matmul(bd);
    RW_RETURN_IF_ERROR(bd_dy_.Init(engine, y, dy_in, Staged::kInput));
    RW_RETURN_IF_ERROR(bd_wt_.Init(engine, wt, wt_in, Staged::kInput));
    RW_RETURN_IF_ERROR(bd_dx_.Init(engine, dx, dx, Staged::kOutput));

    dnnl::matmul::primitive_desc bw(dnnl::matmul::desc(xt_in, dy_in, dw), engine);
    backward_weights_ = dnnl::matmul(bw);
    RW_RETURN_IF_ERROR(bw_xt_.Init(engine, xt, xt_in, Staged::kInput));
    RW_RETURN_IF_ERROR(bw_dy_.Init(engine, y, dy_in, Staged::kInput));
    RW_RETURN_IF_ERROR(bw_dw_.Init(engine, dw, dw, Staged::kOutput));

  } catch (const dnnl::error& e) {
    return DnnlError(e, "create the dense (matmul) primitives");
  }
  return absl::OkStatus();
}

void DenseKernel::Forward(KernelContext& ctx, const float* x, const float* w, const float* bias,
                          float* y) {
  KernelContext::ScopedThreads threads(ctx);
  dnnl::stream& s = ctx.stream();
  Execute(forward_, s,
          {{DNNL_ARG_SRC, fwd_x_.Input(s, x)},
           {DNNL_ARG_WEIGHTS, fwd_w_.Input(s, w)},
           {DNNL_ARG_BIAS, fwd_bias_.Input(s, bias)},
           {DNNL_ARG_DST, fwd_y_.Output(y)}});
}

void DenseKernel::BackwardData(KernelContext& ctx, const float* dy, const float* w, float* dx) {
  KernelContext::ScopedThreads threads(ctx);
  dnnl::stream& s = ctx.stream();
  Execute(backward_data_, s,
          {{DNNL_ARG_SRC, bd_dy_.Input(s, dy)},
           {DNNL_ARG_WEIGHTS, bd_wt_.Input(s, w)},
           {DNNL_ARG_DST, bd_dx_.Output(dx)}});
}

void DenseKernel::BackwardWeights(KernelContext& ctx, const float* x, const float* dy, float* dw,
                                  float* dbias) {
  KernelContext::ScopedThreads threads(ctx);
  dnnl::stream& s = ctx.stream();
  Execute(backward_weights_, s,
          {{DNNL_ARG_SRC, bw_xt_.Input(s, x)},
           {DNNL_ARG_WEIGHTS, bw_dy_.Input(s, dy)},
           {DNNL_ARG_DST, bw_dw_.Output(dw)}});
  if (dbias != nullptr) {
    // A column sum: oneDNN's reduction has only a reference implementation for this
    // case (and refuses a batch of one); this loop vectorises over the columns.
    const int64_t n = shape_.out;
    std::fill(dbias, dbias + n, 0.f);
    for (int64_t i = 0; i < shape_.batch; ++i) {
      const float* __restrict row = dy + i * n;
      for (int64_t j = 0; j < n; ++j) dbias[j] += row[j];
    }
  }
}

}  // namespace ringwork
