#include "runtime/collectives/collective_context.h"

#include <cstring>

namespace ringwork {
namespace {

void CopyConsume(void* context, size_t offset, const void* src, size_t bytes) {
  const SinkTarget* target = static_cast<const SinkTarget*>(context);
  std::memcpy(target->dst + offset, src, bytes);
}

void ReduceConsume(void* context, size_t offset, const void* src, size_t bytes) {
  const SinkTarget* target = static_cast<const SinkTarget*>(context);
  const size_t element = DataTypeSize(target->dtype);
  Accumulate(target->dtype, target->op, target->dst + offset, src, bytes / element);
}

}  // namespace

RecvSink MakeSink(SinkTarget* target) {
  RecvSink sink;
  sink.consume = target->reduce ? &ReduceConsume : &CopyConsume;
  sink.context = target;
  return sink;
}

void RequestPool::Reserve(size_t count) {
  if (count <= capacity_) return;
  capacity_ = std::max(count, capacity_ * 2);
  requests_ = std::make_unique<Request[]>(capacity_);
  targets_ = std::make_unique<SinkTarget[]>(capacity_);
}

}  // namespace ringwork
