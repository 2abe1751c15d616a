// The evaluator role in one's own app: the same program runs on the workers and on
// a TF_CONFIG task of type `evaluator` (Keras' SidecarEvaluator). Workers train in
// the strategy's scope and the chief writes checkpoints; the evaluator, which
// never joins the ring, evaluates each new checkpoint until the final one.
//
//   bazel build //examples:evaluator_app //tools/launch:launch
//   bazel-bin/tools/launch/launch --num_workers=2 --evaluator -- \
//       bazel-bin/examples/evaluator_app $(mktemp -d)
//
// The directory should be new: in one that holds an earlier run's checkpoints,
// the evaluator may evaluate that run's final one and stop.
#include <cstdio>

#include "ringwork.h"

namespace {

using namespace ringwork;

// Every task makes the same model: the evaluator's loads the workers' checkpoints.
void AddLayers(Sequential& model) {
  model.Add(Flatten());
  model.Add(Dense(64, {.activation = "relu"}));
  model.Add(Dense(10, {.activation = "softmax"}));
}

CompileOptions Compiled() {
  CompileOptions compile;
  compile.loss = {"sparse_categorical_crossentropy"};
  compile.optimizer = {.name = "adam"};
  compile.metrics = {"accuracy"};
  return compile;
}

absl::Status Evaluate(const std::string& checkpoints, TrainTest data) {
  Sequential model;  // Outside any scope: the evaluator's own.
  AddLayers(model);
  RW_RETURN_IF_ERROR(model.Compile(Compiled()));
  RW_RETURN_IF_ERROR(model.Build(data.test.example_shape()));
  const Dataset test = Dataset::FromExamples(std::move(data.test));
  SidecarEvaluator evaluator(&model, &test,
                             {.checkpoint_dir = checkpoints,
                              .metrics_path = checkpoints + "/evaluations.jsonl",
                              .poll_interval_s = 0.1,
                              .timeout_s = 120});
  RW_RETURN_IF_ERROR(evaluator.Run());
  std::printf("evaluator_app: evaluated %zu checkpoints; final accuracy %.4f\n",
              evaluator.evaluations().size(),
              evaluator.evaluations().back().result.metrics.at("accuracy"));
  return absl::OkStatus();
}

absl::Status Train(const std::string& checkpoints, TrainTest data) {
  RW_ASSIGN_OR_RETURN(std::unique_ptr<MultiWorkerMirroredStrategy> strategy,
                      MultiWorkerMirroredStrategy::Create());
  Sequential model;
  {
    auto scope = strategy->scope();
    model = Sequential();
    AddLayers(model);
  }
  RW_RETURN_IF_ERROR(model.Compile(Compiled()));
  ModelCheckpoint save({.directory = checkpoints, .save_freq_steps = 8});
  const Dataset train = Dataset::FromExamples(std::move(data.train));
  RW_ASSIGN_OR_RETURN(
      History history,
      model.Fit(train, {.epochs = 2, .batch_size = 128, .verbose = 0, .callbacks = {&save}}));
  if (strategy->is_chief()) {
    std::printf("evaluator_app: trained on %d workers; loss %.4f\n",
                strategy->num_replicas_in_sync(), history["loss"].back());
  }
  return strategy->Shutdown();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: evaluator_app CHECKPOINT_DIR\n");
    return 2;
  }
  // 1. Which task is this? Chief and workers train; an evaluator evaluates.
  absl::StatusOr<ClusterConfig> task = ResolveThisTask();
  if (!task.ok()) ExitWithStatus(task.status());
  absl::StatusOr<TrainTest> data = SyntheticImages(2048, 512, 1);
  if (!data.ok()) ExitWithStatus(data.status());
  const absl::Status done =
      task->in_ring() ? Train(argv[1], *std::move(data)) : Evaluate(argv[1], *std::move(data));
  if (!done.ok()) ExitWithStatus(done);
  return 0;
}
