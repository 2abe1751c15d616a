// A program outside Ringwork's workspace that trains with it.
#include <cstdio>

#include "ringwork.h"

int main() {
  using namespace ringwork;
  auto strategy = MultiWorkerMirroredStrategy::Create();
  if (!strategy.ok()) ExitWithStatus(strategy.status());
  TrainTest data = SyntheticImages(1024, 256, 1);
  Sequential model;
  {
    auto scope = (*strategy)->scope();
    model = Sequential();
    model.Add(Flatten());
    model.Add(Dense(10));
  }
  CompileOptions compile;
  compile.loss = {"sparse_categorical_crossentropy", true};
  if (absl::Status s = model.Compile(compile); !s.ok()) ExitWithStatus(s);
  FitOptions fit;
  fit.verbose = 0;
  fit.batch_size = 64;
  auto history = model.Fit(Dataset::FromExamples(std::move(data.train)), fit);
  if (!history.ok()) ExitWithStatus(history.status());
  std::printf("external app: loss %.4f after one epoch on %d worker(s)\n",
              (*history)["loss"].back(), (*strategy)->num_replicas_in_sync());
  return 0;
}
