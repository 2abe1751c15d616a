// EarlyStopping's and ReduceLROnPlateau's rules, epoch by epoch, on chosen
// sequences of the monitored value, against Keras 3's on_epoch_end (traced by hand
// in each case's comment). training_callbacks_test.cc runs them on clusters.
#include <catch2/catch.hpp>
#include <vector>

#include "keras/sequential.h"
#include "keras/training_callbacks.h"

namespace ringwork {
namespace {

// A compiled one-layer model (one local worker) for the callbacks to steer.
Sequential& SmallModel() {
  static Sequential* model = [] {
    auto* m = new Sequential();
    m->Add(Dense(1));
    REQUIRE(m->Compile({.loss = {"mse"},
                        .optimizer = {.name = "sgd", .learning_rate = 1.f},
                        .metrics = {},
                        .intra_op_threads = 1})
                .ok());
    REQUIRE(m->Build({2}).ok());
    return m;
  }();
  return *model;
}

// The learning rate after each epoch's end, for `losses` as the epochs' "loss".
std::vector<float> RatesAfterEachEpoch(ReduceLROnPlateauOptions options,
                                       const std::vector<double>& losses) {
  Sequential& model = SmallModel();
  REQUIRE(model.optimizer()->set_learning_rate(1.f).ok());
  options.monitor = "loss";
  options.verbose = false;
  ReduceLROnPlateau callback(options);
  callback.set_model(&model);
  REQUIRE(callback.OnTrainBegin({}).ok());
  std::vector<float> rates;
  for (size_t epoch = 0; epoch < losses.size(); ++epoch) {
    REQUIRE(callback.OnEpochEnd(static_cast<int64_t>(epoch), {{"loss", losses[epoch]}}).ok());
    rates.push_back(model.optimizer()->learning_rate());
  }
  return rates;
}

TEST_CASE("ReduceLROnPlateau's cooldown holds the rate for cooldown - 1 epochs, as Keras'",
          "[callbacks]") {
  const std::vector<double> plateau = {1, 1, 1, 1, 1, 1};
  // Keras decrements the cooldown at the start of the epoch that follows a
  // reduction, so cooldown 1 never holds a plateau (patience 1 reduces each epoch).
  const std::vector<float> every_epoch = {1, 0.5f, 0.25f, 0.125f, 0.0625f, 0.03125f};
  CHECK(RatesAfterEachEpoch({.factor = 0.5, .patience = 1, .cooldown = 0}, plateau) == every_epoch);
  CHECK(RatesAfterEachEpoch({.factor = 0.5, .patience = 1, .cooldown = 1}, plateau) == every_epoch);
  // Cooldown 2: epoch 1 reduces; epoch 2 is in the cooldown; epoch 3 counts again.
  CHECK(RatesAfterEachEpoch({.factor = 0.5, .patience = 1, .cooldown = 2}, plateau) ==
        std::vector<float>{1, 0.5f, 0.5f, 0.25f, 0.25f, 0.125f});
  // Cooldown 3 with patience 2: reductions at epochs 2 and 6.
  CHECK(RatesAfterEachEpoch({.factor = 0.5, .patience = 2, .cooldown = 3},
                            {1, 1, 1, 1, 1, 1, 1, 1}) ==
        std::vector<float>{1, 1, 0.5f, 0.5f, 0.5f, 0.5f, 0.25f, 0.25f});
  // An improvement inside the cooldown still becomes the best (else 0.6 would be
  // one at epoch 3).
  CHECK(RatesAfterEachEpoch({.factor = 0.5, .patience = 1, .cooldown = 2}, {1, 1, 0.5, 0.6, 0.6}) ==
        std::vector<float>{1, 0.5f, 0.5f, 0.25f, 0.25f});
  // min_lr is a floor; at the floor nothing changes.
  CHECK(RatesAfterEachEpoch({.factor = 0.5, .patience = 1, .min_lr = 0.3}, {1, 1, 1, 1}) ==
        std::vector<float>{1, 0.5f, 0.3f, 0.3f});
}

// The epoch EarlyStopping stopped at (0: it did not) and the best epoch.
std::pair<int64_t, int64_t> StoppedAndBest(EarlyStoppingOptions options,
                                           const std::vector<double>& losses) {
  Sequential& model = SmallModel();
  options.monitor = "val_loss";
  options.verbose = false;
  EarlyStopping callback(options);
  callback.set_model(&model);
  model.set_stop_training(false);
  REQUIRE(callback.OnTrainBegin({}).ok());
  for (size_t epoch = 0; epoch < losses.size() && !model.stop_training(); ++epoch) {
    REQUIRE(callback.OnEpochEnd(static_cast<int64_t>(epoch), {{"val_loss", losses[epoch]}}).ok());
  }
  model.set_stop_training(false);
  return {callback.stopped_epoch(), callback.best_epoch()};
}

TEST_CASE("EarlyStopping's baseline: improvements that do not beat it still count as waiting",
          "[callbacks]") {
  const std::vector<double> losses = {0.9, 0.95, 0.95, 0.95, 0.95};
  // No baseline: epoch 0 is the best; epochs 1 and 2 wait; patience 2 stops at 2.
  CHECK(StoppedAndBest({.patience = 2}, losses) == std::pair<int64_t, int64_t>{2, 0});
  // Baseline 0.5, not beaten: epoch 0 already waits, so epoch 1 stops.
  CHECK(StoppedAndBest({.patience = 2, .baseline = 0.5}, losses) ==
        std::pair<int64_t, int64_t>{1, 0});
  // A baseline beaten (1.0 > 0.9) is as none.
  CHECK(StoppedAndBest({.patience = 2, .baseline = 1.0}, losses) ==
        std::pair<int64_t, int64_t>{2, 0});
  // Improving each epoch never stops, even short of the baseline.
  CHECK(StoppedAndBest({.patience = 1, .baseline = 0.1}, {0.9, 0.8, 0.7, 0.6}) ==
        std::pair<int64_t, int64_t>{0, 3});
}

TEST_CASE("EarlyStopping's start_from_epoch leaves the first epochs unwatched", "[callbacks]") {
  const std::vector<double> losses = {0.5, 0.9, 0.9, 0.9, 0.9};
  CHECK(StoppedAndBest({.patience = 1}, losses) == std::pair<int64_t, int64_t>{1, 0});
  // Epochs 0 and 1 are not watched: epoch 2 is the first best, 3 stops.
  CHECK(StoppedAndBest({.patience = 1, .start_from_epoch = 2}, losses) ==
        std::pair<int64_t, int64_t>{3, 2});
}

}  // namespace
}  // namespace ringwork
