#include "kernels/activation.h"

#include <cstring>

namespace ringwork {
namespace {

dnnl::algorithm Algorithm(Activation activation) {
  switch (activation) {
    case Activation::kRelu:
      return dnnl::algorithm::eltwise_relu;
    case Activation::kTanh:
      return dnnl::algorithm::eltwise_tanh;
    case Activation::kSigmoid:
      return dnnl::algorithm::eltwise_logistic;
    case Activation::kGelu:
      return dnnl::algorithm::eltwise_gelu_erf;
    case Activation::kLinear:
      return dnnl::algorithm::eltwise_linear;
  }
  return dnnl::algorithm::eltwise_linear;
}

}  // namespace

absl::string_view ActivationName(Activation activation) {
  switch (activation) {
    case Activation::kRelu:
      return "relu";
    case Activation::kTanh:
      return "tanh";
    case Activation::kSigmoid:
      return "sigmoid";
    case Activation::kGelu:
      return "gelu";
    case Activation::kLinear:
      return "linear";
  }
  return "linear";
}

bool ParseActivation(absl::string_view name, Activation* out) {
  if (name.empty() || name == "none") {
    *out = Activation::kLinear;
    return true;
  }
  for (Activation a : {Activation::kLinear, Activation::kRelu, Activation::kTanh,
                       Activation::kSigmoid, Activation::kGelu}) {
    if (name == ActivationName(a)) {
      *out = a;
      return true;
    }
  }
  return false;
}

absl::StatusOr<std::unique_ptr<ActivationKernel>> ActivationKernel::Create(KernelContext& ctx,
                                                                           Activation activation,
                                                                           int64_t count) {
  if (count <= 0) return absl::InvalidArgumentError("activation over no elements");
  std::unique_ptr<ActivationKernel> kernel(new ActivationKernel(activation, count));
  // oneDNN plans its work split for the thread count current at creation.
  KernelContext::ScopedThreads threads(ctx);
  try {
    const auto md = Md({count}, DnnlType::f32, Tag::a);
    // Linear: y = 1 * x + 0.
    const float alpha = activation == Activation::kLinear ? 1.f : 0.f;
    dnnl::eltwise_forward::primitive_desc fwd(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, Algorithm(activation), md,
                                    alpha, 0.f),
        ctx.engine());
    kernel->forward_ = dnnl::eltwise_forward(fwd);
    dnnl::eltwise_backward::primitive_desc bwd(
        dnnl::eltwise_backward::desc(Algorithm(activation), md, md, alpha, 0.f), ctx.engine(), fwd);
    kernel->backward_ = dnnl::eltwise_backward(bwd);
    kernel->x_ = dnnl::memory(md, ctx.engine(), DNNL_MEMORY_NONE);
    kernel->y_ = dnnl::memory(md, ctx.engine(), DNNL_MEMORY_NONE);
    kernel->dy_ = dnnl::memory(md, ctx.engine(), DNNL_MEMORY_NONE);
    kernel->dx_ = dnnl::memory(md, ctx.engine(), DNNL_MEMORY_NONE);
  } catch (const dnnl::error& e) {
    return DnnlError(e, "create the activation primitives");
  }
  return kernel;
}

void ActivationKernel::Forward(KernelContext& ctx, const float* x, float* y) {
  KernelContext::ScopedThreads threads(ctx);
  x_.set_data_handle(const_cast<float*>(x));
  y_.set_data_handle(y);
  Execute(forward_, ctx.stream(), {{DNNL_ARG_SRC, x_}, {DNNL_ARG_DST, y_}});
}

void ActivationKernel::Backward(KernelContext& ctx, const float* x, const float* dy, float* dx) {
  KernelContext::ScopedThreads threads(ctx);
  x_.set_data_handle(const_cast<float*>(x));
  dy_.set_data_handle(const_cast<float*>(dy));
  dx_.set_data_handle(dx);
  Execute(backward_, ctx.stream(),
          {{DNNL_ARG_SRC, x_}, {DNNL_ARG_DIFF_DST, dy_}, {DNNL_ARG_DIFF_SRC, dx_}});
}

}  // namespace ringwork
