// Kernels created once per batch size (oneDNN primitives are shape-specific) and
// reused: the last batch of an epoch, or evaluation, may have another size.
//
//   PerBatch<DenseKernel> kernels_;
//   RW_ASSIGN_OR_RETURN(DenseKernel* k, kernels_.Get(batch, [&](int64_t b) {
//     return DenseKernel::Create(ctx, {b, in, out});
//   }));
#ifndef RINGWORK_KERAS_KERNEL_CACHE_H_
#define RINGWORK_KERAS_KERNEL_CACHE_H_

#include <cstdint>
#include <map>
#include <memory>

#include "absl/status/statusor.h"

namespace ringwork {

template <typename Kernel>
class PerBatch {
 public:
  // `make(key)` returns absl::StatusOr<std::unique_ptr<Kernel>>.
  template <typename MakeFn>
  absl::StatusOr<Kernel*> Get(int64_t key, const MakeFn& make) {
    std::unique_ptr<Kernel>& kernel = kernels_[key];
    if (kernel == nullptr) {
      absl::StatusOr<std::unique_ptr<Kernel>> made = make(key);
      if (!made.ok()) {
        kernels_.erase(key);
        return made.status();
      }
      kernel = std::move(*made);
    }
    return kernel.get();
  }

 private:
  std::map<int64_t, std::unique_ptr<Kernel>> kernels_;
};

}  // namespace ringwork

#endif  // RINGWORK_KERAS_KERNEL_CACHE_H_
