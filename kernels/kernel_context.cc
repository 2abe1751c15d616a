#include "kernels/kernel_context.h"

#include <omp.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/cpu_cores.h"

namespace ringwork {

absl::string_view PrecisionName(Precision precision) {
  return precision == Precision::kBFloat16 ? "bfloat16" : "float32";
}

int DefaultIntraOpThreads(int workers_on_this_host) { return CoresPerWorker(workers_on_this_host); }

KernelContext::KernelContext(KernelOptions options, int workers_on_this_host)
    : engine_(dnnl::engine::kind::cpu, 0),
      stream_(engine_),
      threads_(options.intra_op_threads > 0 ? options.intra_op_threads
                                            : DefaultIntraOpThreads(workers_on_this_host)),
      precision_(options.precision) {}

bool KernelContext::HasNativeBFloat16() {
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
}

KernelContext::ScopedThreads::ScopedThreads(const KernelContext& ctx)
    : previous_(omp_get_max_threads()) {
  if (previous_ != ctx.threads()) omp_set_num_threads(ctx.threads());
}

KernelContext::ScopedThreads::~ScopedThreads() {
  if (omp_get_max_threads() != previous_) omp_set_num_threads(previous_);
}

absl::Status DnnlError(const dnnl::error& e, absl::string_view what) {
  return absl::InternalError(
      absl::StrCat("oneDNN failed to ", what, ": ", e.what(), " (status ", e.status, ")"));
}

}  // namespace ringwork
