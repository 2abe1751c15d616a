// What every kernel runs with: the oneDNN CPU engine and stream, the number of
// intra-op threads, and the compute precision. One context per compute thread
// (a oneDNN stream is not shared between threads).
//
//   KernelContext ctx({.intra_op_threads = 1, .precision = Precision::kFloat32});
//   RW_ASSIGN_OR_RETURN(std::unique_ptr<DenseKernel> dense,
//                       DenseKernel::Create(ctx, {128, 784, 256}));
//   // dense->Forward(ctx, x, w, b, y), ... (kernels/dense.h), always with this ctx
//
// Threads: oneDNN here is built on OpenMP; the context sets the OpenMP thread count
// of the thread that runs kernels (ScopedThreads) before each call, so several
// workers on one host can share its cores without oversubscribing them.
#ifndef RINGWORK_KERNELS_KERNEL_CONTEXT_H_
#define RINGWORK_KERNELS_KERNEL_CONTEXT_H_

#include <dnnl.hpp>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace ringwork {

enum class Precision {
  kFloat32,   // Everything in float32.
  kBFloat16,  // Matmuls and convolutions read bfloat16 copies of their inputs and
              // accumulate in float32; weights, gradients and optimizer state stay
              // float32 (the "master weights").
};
absl::string_view PrecisionName(Precision precision);

struct KernelOptions {
  // Intra-op threads (TensorFlow's intra_op_parallelism_threads); 0: the cores this
  // process may use divided by the workers sharing this host.
  int intra_op_threads = 0;
  Precision precision = Precision::kFloat32;
};

// The default intra-op thread count for `workers_on_this_host` workers: their share
// of this process's cores (base/cpu_cores.h).
int DefaultIntraOpThreads(int workers_on_this_host);

class KernelContext {
 public:
  explicit KernelContext(KernelOptions options, int workers_on_this_host = 1);
  KernelContext(const KernelContext&) = delete;
  KernelContext& operator=(const KernelContext&) = delete;

  const dnnl::engine& engine() const { return engine_; }
  dnnl::stream& stream() { return stream_; }
  int threads() const { return threads_; }
  Precision precision() const { return precision_; }
  bool bf16() const { return precision_ == Precision::kBFloat16; }
  // True when this CPU runs bfloat16 matmuls natively (AVX512-BF16 or AMX).
  static bool HasNativeBFloat16();

  // Sets this context's thread count for OpenMP regions started by the calling
  // thread, for the lifetime of the object.
  class ScopedThreads {
   public:
    explicit ScopedThreads(const KernelContext& ctx);
    ~ScopedThreads();

   private:
    int previous_;
  };

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  int threads_;
  Precision precision_;
};

// Converts a oneDNN exception (the one place they are caught) into a status naming
// what was being done.
absl::Status DnnlError(const dnnl::error& e, absl::string_view what);

}  // namespace ringwork

#endif  // RINGWORK_KERNELS_KERNEL_CONTEXT_H_
