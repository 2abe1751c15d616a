// Callbacks that fit() calls, as Keras': History (returned by fit) and the
// progress bar (on the chief only, so a cluster prints one bar). The values a
// callback sees are global: averaged over every replica so far this epoch.
#ifndef RINGWORK_KERAS_CALLBACKS_H_
#define RINGWORK_KERAS_CALLBACKS_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace ringwork {

// "loss", "accuracy", "val_loss", ... -> value.
using Logs = std::map<std::string, double>;

struct TrainInfo {
  int64_t epochs = 0;
  int64_t steps_per_epoch = 0;
  int64_t global_batch_size = 0;
  int replicas = 1;
  bool is_chief = true;
};

class Callback {
 public:
  virtual ~Callback() = default;
  virtual void OnTrainBegin(const TrainInfo& info) {}
  virtual void OnEpochBegin(int64_t epoch) {}
  // After step `step` (from 1) of the current epoch.
  virtual void OnBatchEnd(int64_t step, const Logs& logs) {}
  virtual void OnEpochEnd(int64_t epoch, const Logs& logs) {}
  virtual void OnTrainEnd(const Logs& last_epoch) {}
};

class History : public Callback {
 public:
  void OnEpochEnd(int64_t epoch, const Logs& logs) override;
  // Per metric, one value per epoch.
  const std::map<std::string, std::vector<double>>& history() const { return history_; }
  std::vector<double> operator[](const std::string& metric) const;

 private:
  std::map<std::string, std::vector<double>> history_;
};

// Keras' progress bar: "120/469 [=======>......] - ETA: 3s - loss: 0.61 - accuracy:
// 0.78 - 21733 samples/s". Redrawn in place on a terminal; elsewhere (logs, launch)
// a line every `line_interval_s` and at the end of each epoch.
class ProgressBar : public Callback {
 public:
  explicit ProgressBar(std::FILE* out = stdout, double line_interval_s = 5);
  void OnTrainBegin(const TrainInfo& info) override;
  void OnEpochBegin(int64_t epoch) override;
  void OnBatchEnd(int64_t step, const Logs& logs) override;
  void OnEpochEnd(int64_t epoch, const Logs& logs) override;

 private:
  std::string Line(int64_t step, const Logs& logs, bool final) const;

  std::FILE* out_;
  const bool terminal_;
  const double line_interval_s_;
  TrainInfo info_;
  std::chrono::steady_clock::time_point epoch_start_, last_line_;
};

}  // namespace ringwork

#endif  // RINGWORK_KERAS_CALLBACKS_H_
