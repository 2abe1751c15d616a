#include "runtime/collectives/recursive_doubling_allreduce.h"

#include <cstring>

#include "base/crash_points.h"
#include "base/status_macros.h"
#include "runtime/collectives/chunking.h"

namespace ringwork {

absl::Status RecursiveDoublingAllReduce::Exchange(const CollectiveContext& ctx, uint32_t step,
                                                  int peer, uint8_t* data, size_t bytes, bool send,
                                                  bool recv) {
  if (recv) {
    target_ = SinkTarget{scratch_.data(), ctx.info.dtype, ctx.info.op, false};
    recv_.PrepareRecv(peer, ctx.Key(step, 0), ctx.info, bytes, MakeSink(&target_));
    ctx.transport->PostRecv(&recv_);
  }
  if (send) {
    send_.PrepareSend(peer, ctx.Key(step, 0), ctx.info, data, bytes);
    ctx.transport->PostSend(&send_);
  }
  if (recv) RW_RETURN_IF_ERROR(ctx.Wait(&recv_));
  if (send) RW_RETURN_IF_ERROR(ctx.Wait(&send_));
  return absl::OkStatus();
}

absl::Status RecursiveDoublingAllReduce::Run(const CollectiveContext& ctx, uint8_t* data) {
  const int rank = ctx.rank();
  const int p = ctx.world_size();
  const size_t count = ctx.info.count;
  const size_t bytes = count * ctx.element_bytes();
  const RecursiveDoublingPlan plan = PlanRecursiveDoubling(rank, p);
  const uint32_t post_step = static_cast<uint32_t>(plan.rounds + 1);
  const bool mean = ctx.info.op == ReduceOp::kMean;
  scratch_.resize(bytes);

  // Reduces the peer's data (in scratch_) into `data`, lower rank's value first.
  auto combine = [&](int peer) {
    if (rank < peer) {
      Accumulate(ctx.info.dtype, ctx.info.op, data, scratch_.data(), count);
    } else {
      Accumulate(ctx.info.dtype, ctx.info.op, scratch_.data(), data, count);
      std::memcpy(data, scratch_.data(), bytes);
    }
  };

  if (plan.pre_send_to >= 0) {
    RW_RETURN_IF_ERROR(Exchange(ctx, 0, plan.pre_send_to, data, bytes, true, false));
    RW_RETURN_IF_ERROR(Exchange(ctx, post_step, plan.post_recv_from, data, bytes, false, true));
    std::memcpy(data, scratch_.data(), bytes);
    return absl::OkStatus();
  }
  if (plan.pre_recv_from >= 0) {
    RW_RETURN_IF_ERROR(Exchange(ctx, 0, plan.pre_recv_from, data, bytes, false, true));
    combine(plan.pre_recv_from);
  }
  for (size_t i = 0; i < plan.partners.size(); ++i) {
    const int peer = plan.partners[i];
    RW_RETURN_IF_ERROR(Exchange(ctx, static_cast<uint32_t>(i + 1), peer, data, bytes, true, true));
    combine(peer);
    // Tests: a worker dies after its first round, so that some ranks complete this
    // all-reduce (those its data reached) and others do not.
    if (i == 0 && plan.partners.size() > 1) CrashPoint("allreduce_round");
  }
  if (mean) FinishMean(ctx.info.dtype, data, count, p);
  if (plan.post_send_to >= 0) {
    RW_RETURN_IF_ERROR(Exchange(ctx, post_step, plan.post_send_to, data, bytes, true, false));
  }
  return absl::OkStatus();
}

}  // namespace ringwork
