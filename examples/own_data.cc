// Your own model on your own data: CSV files of numbers, the last column an
// integer class, trained on every worker of the cluster TF_CONFIG describes.
//
//   bazel build //examples:own_data //tools/launch:launch
//   bazel-bin/tools/launch/launch --num_workers=2 -- bazel-bin/examples/own_data train.csv
#include <cstdio>

#include "ringwork.h"

using namespace ringwork;

int main(int argc, char** argv) {
  if (argc < 2) ExitWithStatus(absl::InvalidArgumentError("usage: own_data FILE.csv..."));
  auto strategy = MultiWorkerMirroredStrategy::Create();  // TF_CONFIG, or alone
  if (!strategy.ok()) ExitWithStatus(strategy.status());
  auto examples = ReadCsv({argv + 1, argv + argc}, {.label_column = -1, .header = true});
  if (!examples.ok()) ExitWithStatus(examples.status());
  const int64_t features = examples->example_size();
  Dataset train = Dataset::FromExamples(std::move(*examples));

  auto scope = (*strategy)->scope();  // Models built here are mirrored.
  SymbolicTensor x = Input({features});
  SymbolicTensor h = Apply(Dense(64, {.activation = "relu"}), x);
  SymbolicTensor y = Apply(Dense(3, {.activation = "softmax"}), h);
  Model model(x, y);
  absl::Status compiled = model.Compile({.loss = {"sparse_categorical_crossentropy"},
                                         .optimizer = {.name = "adam", .learning_rate = 0.01}});
  if (!compiled.ok()) ExitWithStatus(compiled);

  auto history = model.Fit(train, {.epochs = 20, .batch_size = 64});  // Global batch.
  if (!history.ok()) ExitWithStatus(history.status());
  auto result = model.Evaluate(train);
  if (!result.ok()) ExitWithStatus(result.status());
  if ((*strategy)->is_chief()) std::printf("accuracy %.3f\n", result->metrics["accuracy"]);
  return (*strategy)->Shutdown().ok() ? 0 : 1;
}
