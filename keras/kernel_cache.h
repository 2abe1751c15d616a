// Kernels created once per batch size (oneDNN primitives are shape-specific) and
// reused: the last batch of an epoch, or evaluation, may have another size.
//
//   PerBatch<DenseKernel> kernels_;
//   RW_ASSIGN_OR_RETURN(DenseKernel* k, kernels_.Get(batch, [&](int64_t b) {
//     return DenseKernel::Create(ctx, {b, in, out});
//   }));
#ifndef RINGWORK_KERAS_KERNEL_CACHE_H_
#define RINGWORK_KERAS_KERNEL_CACHE_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>

#include "absl/status/statusor.h"

namespace ringwork {

using MatmulShape = std::array<int64_t, 3>;  // Rows, in, out.

// `Key`: the batch size, or what else tells the shapes apart (a layer of several
// matmuls keys them by (rows, in, out): MatmulShape).
template <typename Kernel, typename Key = int64_t>
class PerBatch {
 public:
  // `make(key)` returns absl::StatusOr<std::unique_ptr<Kernel>>.
  template <typename MakeFn>
  absl::StatusOr<Kernel*> Get(const Key& key, const MakeFn& make) {
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
  std::map<Key, std::unique_ptr<Kernel>> kernels_;
};

}  // namespace ringwork

#endif  // RINGWORK_KERAS_KERNEL_CACHE_H_
