#include "runtime/collectives/dissemination_barrier.h"

#include "base/status_macros.h"
#include "runtime/collectives/chunking.h"

namespace ringwork {

absl::Status DisseminationBarrier::Run(const CollectiveContext& ctx) {
  const int rank = ctx.rank();
  const int p = ctx.world_size();
  uint32_t round = 0;
  for (int distance = 1; distance < p; distance *= 2, ++round) {
    recv_.PrepareRecv(Mod(rank - distance, p), ctx.Key(round, 0), ctx.info, 0, MakeSink(&target_));
    ctx.transport->PostRecv(&recv_);
    send_.PrepareSend(Mod(rank + distance, p), ctx.Key(round, 0), ctx.info, nullptr, 0);
    ctx.transport->PostSend(&send_);
    RW_RETURN_IF_ERROR(ctx.Wait(&recv_));
    RW_RETURN_IF_ERROR(ctx.Wait(&send_));
  }
  return absl::OkStatus();
}

}  // namespace ringwork
