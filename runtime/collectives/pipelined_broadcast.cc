#include "runtime/collectives/pipelined_broadcast.h"

#include "base/status_macros.h"

namespace ringwork {

TreeNode ChainNode(int rank, int p, int root) {
  TreeNode node;
  const int relative = Mod(rank - root, p);
  if (relative > 0) node.parent = Mod(rank - 1, p);
  if (relative + 1 < p) node.children.push_back(Mod(rank + 1, p));
  return node;
}

absl::Status PipelinedBroadcast::Run(const CollectiveContext& ctx, const TreeNode& node,
                                     uint8_t* data) {
  const size_t count = ctx.info.count;
  const size_t element = ctx.element_bytes();
  const size_t segments = SegmentCount(count, ctx.segment_elems);
  const size_t children = node.children.size();
  recvs_.Reserve(segments);
  sends_.Reserve(segments * children);
  if (node.parent >= 0) {
    for (size_t j = 0; j < segments; ++j) {
      const ElementRange s = Segment(count, ctx.segment_elems, j);
      SinkTarget& target = recvs_.target(j);
      target = SinkTarget{data + s.offset * element, ctx.info.dtype, ctx.info.op, false};
      Request& request = recvs_.request(j);
      request.PrepareRecv(node.parent, ctx.Key(0, static_cast<uint32_t>(j)), ctx.info,
                          s.count * element, MakeSink(&target));
      ctx.transport->PostRecv(&request);
    }
  }
  for (size_t j = 0; j < segments; ++j) {
    if (node.parent >= 0) RW_RETURN_IF_ERROR(ctx.Wait(&recvs_.request(j)));
    const ElementRange s = Segment(count, ctx.segment_elems, j);
    for (size_t c = 0; c < children; ++c) {
      Request& request = sends_.request(j * children + c);
      request.PrepareSend(node.children[c], ctx.Key(0, static_cast<uint32_t>(j)), ctx.info,
                          data + s.offset * element, s.count * element);
      ctx.transport->PostSend(&request);
    }
  }
  for (size_t i = 0; i < segments * children; ++i) {
    RW_RETURN_IF_ERROR(ctx.Wait(&sends_.request(i)));
  }
  return absl::OkStatus();
}

}  // namespace ringwork
