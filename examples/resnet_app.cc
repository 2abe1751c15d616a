// A residual network with the functional API, trained on every worker of the
// cluster TF_CONFIG describes (launch sets it for a localhost cluster):
//
//   bazel build //examples:resnet_app //tools/launch:launch
//   bazel-bin/tools/launch/launch --num_workers=2 -- bazel-bin/examples/resnet_app
//
// With --synthetic it trains on generated images instead of Fashion-MNIST, for a
// few steps.
#include <cstdio>
#include <cstring>
#include <optional>

#include "ringwork.h"

namespace {

using namespace ringwork;

// conv-BN-relu, conv-BN, plus the input (a residual connection), relu.
SymbolicTensor ResidualBlock(const SymbolicTensor& x, int64_t filters) {
  SymbolicTensor h = Apply(Conv2D(filters, 3, {.padding = "same"}), x);
  h = Apply(ActivationLayer("relu"), Apply(BatchNormalization(), h));
  h = Apply(BatchNormalization(), Apply(Conv2D(filters, 3, {.padding = "same"}), h));
  return Apply(ActivationLayer("relu"), Apply(Add(), {h, x}));
}

}  // namespace

int main(int argc, char** argv) {
  const bool synthetic = argc > 1 && std::strcmp(argv[1], "--synthetic") == 0;
  absl::StatusOr<std::unique_ptr<MultiWorkerMirroredStrategy>> strategy =
      MultiWorkerMirroredStrategy::Create();
  if (!strategy.ok()) ExitWithStatus(strategy.status());
  absl::StatusOr<TrainTest> data =
      synthetic ? SyntheticImages(1024, 256, 1) : LoadFashionMnist(kFashionMnistDir);
  if (!data.ok()) ExitWithStatus(data.status());

  // The graph: tensors in, tensors out; the Model is made in the strategy's scope.
  SymbolicTensor inputs = Input({28, 28, 1});
  // Augmentation in the model, as in Keras: a mirrored garment is the same garment
  // (the synthetic images' labels are not mirror-symmetric).
  SymbolicTensor x = synthetic ? inputs : Apply(RandomFlip("horizontal"), inputs);
  x = Apply(Conv2D(16, 3, {.strides = 2, .padding = "same", .activation = "relu"}), x);
  x = ResidualBlock(x, 16);
  x = ResidualBlock(x, 16);
  SymbolicTensor outputs = Apply(Dense(10), Apply(GlobalAveragePooling2D(), x));
  std::optional<Model> made;
  {
    auto scope = (*strategy)->scope();
    made.emplace(inputs, outputs);
  }
  Model& model = *made;

  CompileOptions compile;
  compile.loss = {"sparse_categorical_crossentropy", /*from_logits=*/true};
  compile.optimizer = {.name = "adam", .learning_rate = 2e-3f};
  if (absl::Status s = model.Compile(compile); !s.ok()) ExitWithStatus(s);
  if ((*strategy)->is_chief()) std::printf("%s", model.Summary().c_str());

  Dataset train = Dataset::FromExamples(std::move(data->train));
  Dataset test = Dataset::FromExamples(std::move(data->test));
  FitOptions fit;
  fit.epochs = synthetic ? 1 : 2;
  fit.batch_size = 128;
  absl::StatusOr<History> history = model.Fit(train, fit);
  if (!history.ok()) ExitWithStatus(history.status());
  absl::StatusOr<EvaluateResult> result = model.Evaluate(test);
  if (!result.ok()) ExitWithStatus(result.status());
  if ((*strategy)->is_chief()) {
    std::printf("resnet_app: test accuracy %.4f on %d worker(s)\n", result->metrics["accuracy"],
                (*strategy)->num_replicas_in_sync());
  }
  if (absl::Status s = (*strategy)->Shutdown(); !s.ok()) ExitWithStatus(s);
  return 0;
}
