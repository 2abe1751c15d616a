// Keras' TensorBoard callback: the chief writes event files that TensorBoard
// reads (observability/event_file.h), one directory per kind of curve:
//
//   TensorBoard tensorboard({.log_dir = "/logs/run1", .update_freq = 100, .histogram_freq = 1});
//   fit.callbacks.push_back(&tensorboard);   // then: tensorboard --logdir /logs
//
// LOG_DIR/train: at each epoch end (step = epoch, from 0) `epoch_loss`,
// `epoch_<metric>`, `epoch_learning_rate`, `epoch_samples_per_second` (global
// batch x steps of this epoch run / its seconds) and the step breakdown as fit
// logs it (`step_breakdown/compute`, ..., keras/step_breakdown.h); with update_freq = N, every N
// steps `batch_loss` and `batch_<metric>` (step = steps done); with
// histogram_freq = N, every N epochs a histogram of each variable (tag
// "dense_1/kernel"). LOG_DIR/validation: `epoch_loss` and `epoch_<metric>` of
// fit's validation data (the `val_` logs). Written as Keras names them; the values
// are global (averaged over every replica), so only the chief writes. Each event
// is visible as soon as it is written; a resumed run adds a file of its own. A
// failed write (disk full) is logged and ends the summaries, not the training.
#ifndef RINGWORK_KERAS_TENSORBOARD_CALLBACK_H_
#define RINGWORK_KERAS_TENSORBOARD_CALLBACK_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "keras/callbacks.h"
#include "observability/event_file.h"

namespace ringwork {

struct TensorBoardOptions {
  std::string log_dir;
  int64_t update_freq = 0;     // Steps between batch summaries; 0: epochs only.
  int64_t histogram_freq = 0;  // Epochs between weight histograms; 0: none.
  // INVALID_ARGUMENT for a negative frequency (check before joining a cluster).
  absl::Status Validate() const;
};

class TensorBoard : public Callback {
 public:
  explicit TensorBoard(TensorBoardOptions options) : options_(std::move(options)) {}
  // A worker that becomes the chief writes the event files on.
  absl::Status OnRegroup(const TrainInfo& info) override;
  absl::Status OnTrainBegin(const TrainInfo& info) override;
  bool decides_per_batch() const override { return false; }
  absl::Status OnEpochBegin(int64_t epoch) override;
  absl::Status OnBatchEnd(int64_t step, const Logs& logs) override;
  absl::Status OnEpochEnd(int64_t epoch, const Logs& logs) override;

 private:
  // False (and no more writing) after a failure, which is logged.
  bool Written(const absl::Status& status);

  TensorBoardOptions options_;
  TrainInfo info_;
  bool active_ = false;
  int64_t epoch_ = 0;
  int64_t first_step_ = -1;  // Of this epoch, in this run (a resumed epoch starts later).
  int64_t last_step_ = 0;
  std::chrono::steady_clock::time_point epoch_start_;
  std::unique_ptr<EventFileWriter> train_, validation_;
};

}  // namespace ringwork

#endif  // RINGWORK_KERAS_TENSORBOARD_CALLBACK_H_
