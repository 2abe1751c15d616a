#include "tools/train_evaluator.h"

#include <cstdio>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "keras/sidecar_evaluator.h"

namespace ringwork {

absl::Status RunEvaluator(const TrainFlags& f) {
  if (f.checkpoint_dir.empty()) {
    return absl::InvalidArgumentError(
        "an evaluator task needs --checkpoint_dir (env RINGWORK_CHECKPOINT_DIR): the directory "
        "the chief writes its checkpoints to");
  }
  RW_ASSIGN_OR_RETURN(CompileOptions compile, MakeCompileOptions(f));
  RW_ASSIGN_OR_RETURN(TrainTest data, LoadData(f));
  // A model of its own, outside any cluster: its strategy is local.
  RW_ASSIGN_OR_RETURN(Model model, BuildModel(f));
  RW_RETURN_IF_ERROR(model.Compile(compile));
  RW_RETURN_IF_ERROR(model.Build(data.test.example_shape()));
  Dataset test = Dataset::FromExamples(std::move(data.test));
  SidecarEvaluator evaluator(
      &model, &test,
      {.checkpoint_dir = f.checkpoint_dir,
       .metrics_path = f.evaluator_metrics.empty() ? f.checkpoint_dir + "/evaluations.jsonl"
                                                   : f.evaluator_metrics,
       .summary_dir = f.tensorboard_dir.empty() ? "" : f.tensorboard_dir + "/validation",
       .batch_size = f.global_batch_size,
       .poll_interval_s = f.evaluator_poll_s,
       .timeout_s = f.evaluator_timeout_s,
       .timeout_flag = "--evaluator_timeout_s (env RINGWORK_EVALUATOR_TIMEOUT_S)"});
  RW_RETURN_IF_ERROR(evaluator.Run());
  const CheckpointEvaluation& last = evaluator.evaluations().back();
  std::printf("Evaluated %zu checkpoint%s; final (step %lld): accuracy %.4f - loss %.4f\n",
              evaluator.evaluations().size(), evaluator.evaluations().size() == 1 ? "" : "s",
              static_cast<long long>(last.step), last.result.metrics.at("accuracy"),
              last.result.loss);
  std::fflush(stdout);
  return absl::OkStatus();
}

}  // namespace ringwork
