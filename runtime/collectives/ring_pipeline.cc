#include "runtime/collectives/ring_pipeline.h"

#include "base/check.h"
#include "base/crash_points.h"
#include "base/status_macros.h"

namespace ringwork {

std::vector<PipelineStep> RingSteps(int rank, int p, bool reduce_scatter, bool all_gather,
                                    bool mean) {
  std::vector<PipelineStep> steps;
  if (reduce_scatter) {
    for (int k = 0; k + 1 < p; ++k) {
      RingStep s = ReduceScatterStep(rank, p, k);
      steps.push_back({s.send_chunk, s.recv_chunk, true, mean && k + 2 == p});
    }
  }
  if (all_gather) {
    for (int k = 0; k + 1 < p; ++k) {
      RingStep s = AllGatherStep(rank, p, k);
      steps.push_back({s.send_chunk, s.recv_chunk, false, false});
    }
  }
  return steps;
}

absl::Status RingPipeline::Run(const CollectiveContext& ctx, uint8_t* buffer,
                               const std::vector<ElementRange>& chunks,
                               const std::vector<PipelineStep>& steps, const RingGroup& group) {
  const bool whole_world = group.members.empty();
  const int p = whole_world ? ctx.world_size() : static_cast<int>(group.members.size());
  const int position = whole_world ? ctx.rank() : group.position;
  const int left = whole_world ? Mod(position - 1, p) : group.members[Mod(position - 1, p)];
  const int right = whole_world ? Mod(position + 1, p) : group.members[Mod(position + 1, p)];
  const int mean_divisor = group.mean_divisor > 0 ? group.mean_divisor : p;
  const uint32_t first_step = group.first_step;
  const size_t steps_count = steps.size();
  if (steps_count == 0) return absl::OkStatus();
  const size_t element = ctx.element_bytes();
  const size_t seg = ctx.segment_elems;

  // Request indices: step k's segments start at recv_base[k] / send_base[k].
  std::vector<size_t> recv_base(steps_count + 1, 0), send_base(steps_count + 1, 0);
  for (size_t k = 0; k < steps_count; ++k) {
    recv_base[k + 1] = recv_base[k] + SegmentCount(chunks[steps[k].recv_chunk].count, seg);
    send_base[k + 1] = send_base[k] + SegmentCount(chunks[steps[k].send_chunk].count, seg);
    if (k > 0) RW_CHECK_EQ(steps[k].send_chunk, steps[k - 1].recv_chunk);
  }
  recvs_.Reserve(recv_base[steps_count]);
  sends_.Reserve(send_base[steps_count]);
  std::vector<size_t> chunk_base(p + 1, 0);
  for (int c = 0; c < p; ++c)
    chunk_base[c + 1] = chunk_base[c] + SegmentCount(chunks[c].count, seg);
  last_send_.assign(chunk_base[p], nullptr);

  auto segment_of = [&](int chunk, size_t j) {
    ElementRange s = Segment(chunks[chunk].count, seg, j);
    s.offset += chunks[chunk].offset;
    return s;
  };
  auto post_recv = [&](size_t k, size_t j) -> absl::Status {
    const int chunk = steps[k].recv_chunk;
    // Data still being sent from this segment must leave before new data lands.
    Request*& pending = last_send_[chunk_base[chunk] + j];
    if (pending != nullptr && !pending->is_done()) RW_RETURN_IF_ERROR(ctx.Wait(pending));
    const ElementRange s = segment_of(chunk, j);
    const size_t index = recv_base[k] + j;
    SinkTarget& target = recvs_.target(index);
    target = SinkTarget{buffer + s.offset * element, ctx.info.dtype, ctx.info.op, steps[k].reduce};
    Request& request = recvs_.request(index);
    request.PrepareRecv(left,
                        ctx.Key(first_step + static_cast<uint32_t>(k), static_cast<uint32_t>(j)),
                        ctx.info, s.count * element, MakeSink(&target));
    ctx.transport->PostRecv(&request);
    return absl::OkStatus();
  };
  auto post_send = [&](size_t k, size_t j) {
    const int chunk = steps[k].send_chunk;
    const ElementRange s = segment_of(chunk, j);
    Request& request = sends_.request(send_base[k] + j);
    request.PrepareSend(right,
                        ctx.Key(first_step + static_cast<uint32_t>(k), static_cast<uint32_t>(j)),
                        ctx.info, buffer + s.offset * element, s.count * element);
    ctx.transport->PostSend(&request);
    last_send_[chunk_base[chunk] + j] = &request;
  };

  const size_t first_recvs = recv_base[1] - recv_base[0];
  for (size_t j = 0; j < first_recvs; ++j) RW_RETURN_IF_ERROR(post_recv(0, j));
  for (size_t j = 0; j < send_base[1] - send_base[0]; ++j) post_send(0, j);

  for (size_t k = 0; k < steps_count; ++k) {
    const size_t recvs_here = recv_base[k + 1] - recv_base[k];
    const size_t recvs_next = k + 1 < steps_count ? recv_base[k + 2] - recv_base[k + 1] : 0;
    for (size_t j = 0; j < recvs_here; ++j) {
      RW_RETURN_IF_ERROR(ctx.Wait(&recvs_.request(recv_base[k] + j)));
      if (steps[k].finish_mean) {
        const ElementRange s = segment_of(steps[k].recv_chunk, j);
        FinishMean(ctx.info.dtype, buffer + s.offset * element, s.count, mean_divisor);
      }
      if (k + 1 < steps_count) {
        post_send(k + 1, j);
        if (j < recvs_next) RW_RETURN_IF_ERROR(post_recv(k + 1, j));
      }
    }
    for (size_t j = recvs_here; j < recvs_next; ++j) RW_RETURN_IF_ERROR(post_recv(k + 1, j));
    // Tests kill a worker here: data has moved both ways, the ring is half done.
    if (k == 0 && ctx.info.kind == CollectiveKind::kAllReduce) CrashPoint("allreduce");
  }
  for (size_t i = 0; i < send_base[steps_count]; ++i) {
    RW_RETURN_IF_ERROR(ctx.Wait(&sends_.request(i)));
  }
  return absl::OkStatus();
}

}  // namespace ringwork
