#include "kernels/dnnl_util.h"

#include "base/check.h"

namespace ringwork {

absl::Status Staged::Init(const dnnl::engine& engine, const dnnl::memory::desc& user,
                          const dnnl::memory::desc& wanted, Direction direction) {
  try {
    user_ = dnnl::memory(user, engine, DNNL_MEMORY_NONE);
    reorders_ = user != wanted;
    if (!reorders_) return absl::OkStatus();
    staged_ = dnnl::memory(wanted, engine);  // Allocates the scratch buffer.
    reorder_ = direction == kInput ? dnnl::reorder(user_, staged_) : dnnl::reorder(staged_, user_);
  } catch (const dnnl::error& e) {
    return DnnlError(e, "create a reorder");
  }
  return absl::OkStatus();
}

const dnnl::memory& Staged::Input(dnnl::stream& stream, const void* user) {
  user_.set_data_handle(const_cast<void*>(user));
  if (!reorders_) return user_;
  reorder_.execute(stream, user_, staged_);
  return staged_;
}

const dnnl::memory& Staged::Output(void* user) {
  user_.set_data_handle(user);
  return reorders_ ? staged_ : user_;
}

void Staged::FinishOutput(dnnl::stream& stream, void* user) {
  if (!reorders_) return;
  user_.set_data_handle(user);
  reorder_.execute(stream, staged_, user_);
}

void Execute(dnnl::primitive& primitive, dnnl::stream& stream,
             const std::unordered_map<int, dnnl::memory>& args) {
  try {
    primitive.execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& e) {
    RW_CHECK(false) << "oneDNN primitive failed after a successful creation: " << e.what();
  }
}

}  // namespace ringwork
