// A Keras-style app on Ringwork: the same program runs on every worker; TF_CONFIG
// says which one it is (launch sets it for a localhost cluster).
//
//   bazel build //examples:keras_app //tools/launch:launch
//   bazel-bin/tools/launch/launch --num_workers=2 -- bazel-bin/examples/keras_app
//
// With --synthetic it trains on generated images instead of Fashion-MNIST.
#include <cstdio>
#include <cstring>

#include "ringwork.h"

int main(int argc, char** argv) {
  using namespace ringwork;
  const bool synthetic = argc > 1 && std::strcmp(argv[1], "--synthetic") == 0;

  // 1. Join the cluster described by TF_CONFIG (or run alone without one).
  absl::StatusOr<std::unique_ptr<MultiWorkerMirroredStrategy>> strategy =
      MultiWorkerMirroredStrategy::Create();
  if (!strategy.ok()) ExitWithStatus(strategy.status());

  // 2. Data: every worker loads it; fit() gives each its shard.
  absl::StatusOr<TrainTest> data =
      synthetic ? SyntheticImages(4096, 1024, 1) : LoadFashionMnist(kFashionMnistDir);
  if (!data.ok()) ExitWithStatus(data.status());

  // 3. Build and compile the model inside the strategy's scope.
  Sequential model;
  {
    auto scope = (*strategy)->scope();
    model = Sequential();
    model.Add(Flatten());
    model.Add(Dense(128, {.activation = "relu"}));
    model.Add(Dense(10, {.activation = "softmax"}));
  }
  CompileOptions compile;
  compile.loss = {"sparse_categorical_crossentropy"};
  compile.optimizer = {.name = "adam"};
  // A cosine decay after a linear warmup, as tf.keras.optimizers.schedules.CosineDecay.
  absl::StatusOr<std::shared_ptr<const LearningRateSchedule>> schedule = CosineDecay(
      {.initial_learning_rate = 0, .decay_steps = 900, .warmup_target = 2e-3, .warmup_steps = 100});
  if (!schedule.ok()) ExitWithStatus(schedule.status());
  compile.optimizer.learning_rate_schedule = *schedule;
  compile.optimizer.clipping.global_clipnorm = 5;
  compile.metrics = {"accuracy"};
  if (absl::Status s = model.Compile(compile); !s.ok()) ExitWithStatus(s);

  // 4. Train: batch_size is global, split over the workers.
  Dataset train = Dataset::FromExamples(std::move(data->train));
  Dataset test = Dataset::FromExamples(std::move(data->test));
  FitOptions fit;
  fit.epochs = 2;
  fit.batch_size = 128;
  fit.validation_data = &test;
  // Stop when val_loss stops improving; every worker stops at the same epoch.
  EarlyStopping early_stopping(
      {.monitor = "val_loss", .patience = 2, .restore_best_weights = true});
  fit.callbacks = {&early_stopping};
  absl::StatusOr<History> history = model.Fit(train, fit);
  if (!history.ok()) ExitWithStatus(history.status());

  // 5. Every worker gets the same numbers; the chief prints them.
  absl::StatusOr<EvaluateResult> result = model.Evaluate(test);
  if (!result.ok()) ExitWithStatus(result.status());
  if ((*strategy)->is_chief()) {
    std::printf("keras_app: test accuracy %.4f on %d worker(s)\n", result->metrics["accuracy"],
                (*strategy)->num_replicas_in_sync());
  }
  if (absl::Status s = (*strategy)->Shutdown(); !s.ok()) ExitWithStatus(s);
  return 0;
}
