// Sequential's part of elastic training: surviving a peer's failure inside fit
// (strategy/multi_worker_mirrored_strategy.h, Options::min_workers).
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "keras/sequential.h"
#include "keras/training_state.h"
#include "observability/timeline.h"

namespace ringwork {

absl::Status Sequential::SurvivePeerFailure(const absl::Status& failure, int64_t* progress,
                                            int64_t* slowest, std::vector<double>* epoch_sums) {
  TimelineSpan span("elastic", "survive a peer failure");
  RW_LOG(WARNING) << "elastic training: the ring failed: " << failure.message()
                  << "; regrouping with the workers still running";
  // The reducer's thread leaves the failed collective (the transport is aborted)
  // before the runtime it uses goes away.
  strategy_->Abort(failure);
  reducer_.reset();
  RW_RETURN_IF_ERROR(strategy_->Regroup(failure));
  reducer_ = strategy_->MakeGradientReducer(variables(), /*allow_overlap=*/!layer_collectives_);
  // Every worker runs fit's operations in the same order, and one that completed
  // an operation saw every replica's part of it (a step: all gradients); replicas
  // are identical after every step. So the survivors go on at the furthest
  // progress any made, with that worker's state (the lowest rank among those, so
  // that every worker picks the same one).
  Communicator* comm = strategy_->communicator();
  const int64_t world = comm->world_size();
  int64_t key[2] = {*progress * world + (world - 1 - comm->rank()), -*progress};
  RW_RETURN_IF_ERROR(comm->AllReduce(key, 2, DataType::kInt64, ReduceOp::kMax));
  const int root = static_cast<int>(world - 1 - key[0] % world);
  *progress = key[0] / world;
  *slowest = -key[1];
  RW_RETURN_IF_ERROR(AdoptTrainingStateOf(*this, root));
  return comm->Broadcast(epoch_sums->data(), epoch_sums->size(), DataType::kFloat64, root);
}

}  // namespace ringwork
