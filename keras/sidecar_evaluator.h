// Keras' SidecarEvaluator: a process beside the training job (TF_CONFIG task type
// `evaluator`) that never joins the ring. It polls the chief's checkpoint directory
// (ModelCheckpoint's), evaluates every new checkpoint's weights on a data set,
// appends the metrics as one JSON line per checkpoint, and stops after the
// checkpoint marked final. Training never waits for it.
//
//   Sequential model;                      // the trainer's model, outside any scope
//   model.Add(Dense(10));
//   RW_RETURN_IF_ERROR(model.Compile({.loss = {"sparse_categorical_crossentropy", true}}));
//   RW_RETURN_IF_ERROR(model.Build({784}));
//   SidecarEvaluator evaluator(&model, &test_set, {.checkpoint_dir = "/ckpt/models",
//                                                  .metrics_path = "/ckpt/eval.jsonl"});
//   RW_RETURN_IF_ERROR(evaluator.Run());
//
// Errors: DEADLINE_EXCEEDED (exit 4) when no new checkpoint appears for
// `timeout_s` (named with `timeout_flag`); DATA_LOSS (exit 5) for a corrupt one;
// FAILED_PRECONDITION (exit 7) for another model's. A checkpoint the trainer
// rotated away while it was being read is skipped, and a `latest` that is corrupt
// or names a file which is gone is read again (the trainer replaces `latest`, then
// removes the old file): it is corrupt only if the same `latest` stays so for
// `vanished_grace_s`.
#ifndef RINGWORK_KERAS_SIDECAR_EVALUATOR_H_
#define RINGWORK_KERAS_SIDECAR_EVALUATOR_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "keras/model.h"
#include "observability/event_file.h"

namespace ringwork {

struct SidecarEvaluatorOptions {
  std::string checkpoint_dir;
  std::string metrics_path;  // JSON lines, appended; none when empty.
  // TensorBoard event files (keras/tensorboard_callback.h), none when empty: per
  // checkpoint `evaluation_loss_vs_iterations` (and per metric) at its step, and
  // for a checkpoint at an epoch's end `epoch_loss` (and per metric) at that epoch
  // (from 0), beside the chief's LOG_DIR/train curves. A failed write is logged and
  // ends the summaries, not the evaluations.
  std::string summary_dir;
  int64_t batch_size = 256;
  double poll_interval_s = 1.0;
  double timeout_s = 600;  // Without a new checkpoint.
  double vanished_grace_s = 5;
  std::string timeout_flag = "--evaluator_timeout_s";
  int64_t max_evaluations = 0;  // 0: until the final checkpoint.
};

struct CheckpointEvaluation {
  std::string path;
  int64_t step = 0;
  int64_t epoch = 0;
  bool final = false;
  EvaluateResult result;
};

class SidecarEvaluator {
 public:
  SidecarEvaluator(Model* model, const Dataset* data, SidecarEvaluatorOptions options)
      : model_(model), data_(data), options_(std::move(options)) {}

  // Evaluates checkpoints as they appear; OK after the final one (or
  // max_evaluations).
  absl::Status Run();
  const std::vector<CheckpointEvaluation>& evaluations() const { return evaluations_; }

 private:
  absl::Status Evaluate(const std::string& path);
  absl::Status AppendMetrics(const CheckpointEvaluation& e) const;
  absl::Status WriteSummaries(const CheckpointEvaluation& e, int64_t step_in_epoch);

  Model* model_;
  const Dataset* data_;
  SidecarEvaluatorOptions options_;
  std::vector<CheckpointEvaluation> evaluations_;
  std::unique_ptr<EventFileWriter> summaries_;
};

}  // namespace ringwork

#endif  // RINGWORK_KERAS_SIDECAR_EVALUATOR_H_
