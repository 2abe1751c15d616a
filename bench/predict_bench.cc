// Batch prediction time of train's MLP or CNN (random weights: the time does not
// depend on them), and the same model exported to ONNX for
// bench/peers/onnxruntime_predict.js to time (bench/compare_inference.sh).
//
//   bazel-bin/bench/predict_bench --model=cnn --batch=256 --threads=1 --onnx=/tmp/cnn.onnx
//   -> ringwork cnn 256 1 1834.2        (model, batch, threads, median us per batch)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "base/exit_code.h"
#include "base/flags.h"
#include "base/status_macros.h"
#include "keras/applications.h"
#include "keras/onnx_export.h"

namespace ringwork {
namespace {

absl::Status Run(const std::string& name, int64_t batch, int64_t threads, int64_t repeats,
                 const std::string& onnx) {
  if (name != "mlp" && name != "cnn") return absl::InvalidArgumentError("--model: mlp or cnn");
  Model model = name == "mlp" ? MlpClassifier(10) : SmallCnn(10);
  CompileOptions compile;
  compile.loss = {"sparse_categorical_crossentropy", true};
  compile.intra_op_threads = static_cast<int>(threads);
  RW_RETURN_IF_ERROR(model.Compile(compile));
  RW_RETURN_IF_ERROR(model.Build({28, 28, 1}));
  if (!onnx.empty()) RW_RETURN_IF_ERROR(ExportOnnx(model, onnx));
  Tensor x({batch, 28, 28, 1});
  for (int64_t i = 0; i < x.size(); ++i) x[i] = 0.5f + 0.5f * std::sin(0.01f * i);
  std::vector<double> us;
  for (int64_t r = 0; r < repeats + 5; ++r) {
    const auto start = std::chrono::steady_clock::now();
    RW_RETURN_IF_ERROR(model.Predict(x, batch).status());
    const double t =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (r >= 5) us.push_back(t);  // After warming up.
  }
  std::sort(us.begin(), us.end());
  std::printf("ringwork %s %lld %lld %.1f\n", name.c_str(), static_cast<long long>(batch),
              static_cast<long long>(threads), us[us.size() / 2]);
  return absl::OkStatus();
}

}  // namespace
}  // namespace ringwork

int main(int argc, char** argv) {
  using namespace ringwork;
  FlagSet flags("predict_bench: median time of one batch prediction");
  std::string model = "mlp", onnx;
  int64_t batch = 256, threads = 1, repeats = 50;
  flags.String("model", &model, "mlp or cnn (train's)");
  flags.Int("batch", &batch, "examples per prediction");
  flags.Int("threads", &threads, "intra-op threads");
  flags.Int("repeats", &repeats, "timed predictions (after 5 to warm up)");
  flags.String("onnx", &onnx, "also export the model here");
  absl::StatusOr<std::vector<std::string>> args = flags.Parse(argc, argv);
  if (flags.help_requested()) {
    std::cout << flags.HelpText("predict_bench");
    return 0;
  }
  if (!args.ok()) ExitWithStatus(args.status());
  absl::Status done = Run(model, batch, threads, repeats, onnx);
  if (!done.ok()) ExitWithStatus(done);
  return 0;
}
