// Small helpers shared by the oneDNN kernels (kernel implementation detail).
//
// Staged: a tensor in the user's layout and type (float32, NHWC / [in, out] / HWIO)
// given to a primitive that wants another (a blocked layout, bfloat16). A reorder
// primitive into a scratch buffer is created once; when the two descriptions
// match, the user's buffer is used directly.
//
//   Staged x;
//   RW_RETURN_IF_ERROR(x.Init(engine, user_md, prim_pd.src_desc(), Staged::kInput));
//   args[DNNL_ARG_SRC] = x.Input(stream, x_ptr);          // reorders if needed
//   ...                                                    // for outputs:
//   args[DNNL_ARG_DST] = y.Output(y_ptr);
//   prim.execute(stream, args);
//   y.FinishOutput(stream, y_ptr);                         // reorders back
#ifndef RINGWORK_KERNELS_DNNL_UTIL_H_
#define RINGWORK_KERNELS_DNNL_UTIL_H_

#include <dnnl.hpp>
#include <unordered_map>

#include "absl/status/status.h"
#include "kernels/kernel_context.h"

namespace ringwork {

using Dims = dnnl::memory::dims;
using Tag = dnnl::memory::format_tag;
using DnnlType = dnnl::memory::data_type;

inline dnnl::memory::desc Md(const Dims& dims, DnnlType type, Tag tag) {
  return dnnl::memory::desc(dims, type, tag);
}

class Staged {
 public:
  enum Direction { kInput, kOutput };
  absl::Status Init(const dnnl::engine& engine, const dnnl::memory::desc& user,
                    const dnnl::memory::desc& wanted, Direction direction);
  // The memory to pass as an input, after a reorder from `user` if needed.
  const dnnl::memory& Input(dnnl::stream& stream, const void* user);
  // The memory to pass as an output; call FinishOutput after the primitive ran.
  const dnnl::memory& Output(void* user);
  void FinishOutput(dnnl::stream& stream, void* user);
  bool reorders() const { return reorders_; }

 private:
  bool reorders_ = false;
  dnnl::memory user_;
  dnnl::memory staged_;  // Owns its scratch buffer when reorders_.
  dnnl::reorder reorder_;
};

// Runs a primitive; a failure here (after a successful creation) is a bug.
void Execute(dnnl::primitive& primitive, dnnl::stream& stream,
             const std::unordered_map<int, dnnl::memory>& args);

}  // namespace ringwork

#endif  // RINGWORK_KERNELS_DNNL_UTIL_H_
