// `train` as a TF_CONFIG task of type `evaluator`: the sidecar evaluator. It never
// joins the ring; it evaluates the checkpoints the chief writes to
// --checkpoint_dir on the test set (keras/sidecar_evaluator.h).
#ifndef RINGWORK_TOOLS_TRAIN_EVALUATOR_H_
#define RINGWORK_TOOLS_TRAIN_EVALUATOR_H_

#include "absl/status/status.h"
#include "tools/train_flags.h"

namespace ringwork {

absl::Status RunEvaluator(const TrainFlags& f);

}  // namespace ringwork

#endif  // RINGWORK_TOOLS_TRAIN_EVALUATOR_H_
