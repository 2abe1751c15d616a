// model: look into what training produced, take it out in other tools'
// formats, and predict with it.
//
//   model inspect PATH
//       A model (a .keras archive, a TF.js model.json or its directory): its
//       layers, shapes, parameters and compile settings, then its tensors. A
//       checkpoint (a file, or a ModelCheckpoint/BackupAndRestore directory: its
//       latest), a .npz or a .safetensors file: the tensors (name, shape,
//       parameters); for a checkpoint also where training was.
//   model export --to=onnx|tfjs|keras|h5|safetensors|npz PATH OUT
//       A model to any of them; a checkpoint's weights (not the optimizer's
//       state) to npz or safetensors, under their Keras names in Keras' layout.
//   model predict PATH --data=SPEC [--features=NAME,...] --output=FILE.npy
//       Batch inference over every element of SPEC (as train's --train_data:
//       tfrecord:GLOB, csv:GLOB, npz:GLOB, images:DIR), rows in the data's order,
//       what Predict returns (probabilities after a softmax). Under TF_CONFIG (or
//       Slurm) every worker predicts a share and the chief writes the file.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/exit_code.h"
#include "base/flags.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "checkpoint/weights_file.h"
#include "keras/distributed_predict.h"
#include "keras/keras_archive.h"
#include "keras/onnx_export.h"
#include "keras/optimizers.h"
#include "keras/saved_model.h"
#include "keras/tfjs_export.h"
#include "keras/training_state.h"
#include "runtime/config/cluster_source.h"
#include "strategy/multi_worker_mirrored_strategy.h"
#include "tools/train_data.h"

namespace ringwork {
namespace {

constexpr const char* kUsage =
    "model: look into what training produced, take it out, predict with it\n"
    "\n"
    "  model inspect PATH\n"
    "      a model (.keras, TF.js model.json or its directory): layers and settings;\n"
    "      the tensors of a checkpoint (a file, or a checkpoint or backup directory: its\n"
    "      latest), a .npz or a .safetensors weights file\n"
    "  model export --to=onnx|tfjs|keras|h5|safetensors|npz PATH OUT\n"
    "      a model to any of them; a checkpoint's weights to npz or safetensors\n"
    "  model predict PATH --data=SPEC [--features=NAME,...] --output=FILE.npy\n"
    "      batch inference, rows in the data's order; every worker of TF_CONFIG's\n"
    "      cluster predicts a share, the chief writes FILE\n"
    "\n"
    "Exit codes: 0 ok, 2 usage error, a missing file or an unsupported model, 5 a\n"
    "corrupt file, 7 weights that do not fit the model.";

std::string WithCommas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) absl::StrAppend(&out, i ? ", " : "", shape[i]);
  return out + "]";
}

// A whole model (architecture and weights), not only weights.
bool IsModel(const std::string& path) {
  std::error_code error;
  return absl::EndsWith(path, ".keras") || absl::EndsWith(path, "model.json") ||
         std::filesystem::exists(path + "/model.json", error);
}

absl::Status InspectModel(const std::string& path) {
  RW_ASSIGN_OR_RETURN(Model model, LoadModel(path));
  std::cout << path << ": " << (absl::EndsWith(path, ".keras") ? "Keras 3 archive" : "TF.js model")
            << "\n"
            << model.Summary();
  const CompileOptions& c = model.compile_options();
  std::cout << "compiled: optimizer " << c.optimizer.name << " (learning rate "
            << WithKerasDefaults(c.optimizer).learning_rate.value() << "), loss " << c.loss.name
            << (c.loss.from_logits ? " from logits" : "") << ", metrics "
            << (c.metrics.empty() ? "none" : absl::StrJoin(c.metrics, ", ")) << "\n";
  return absl::OkStatus();
}

absl::Status ExportModel(const std::string& to, const std::string& path, const std::string& out) {
  RW_ASSIGN_OR_RETURN(Model model, LoadModel(path));
  if (to == "onnx") return ExportOnnx(model, out);
  if (to == "tfjs") return ExportTfjs(model, out);
  if (to == "keras") {
    if (!absl::EndsWith(out, ".keras")) {
      return absl::InvalidArgumentError(out + ": a --to=keras file ends in .keras");
    }
    return SaveKerasArchive(model, out);
  }
  const std::string ending = to == "h5" ? ".weights.h5" : "." + to;
  if (!absl::EndsWith(out, ending)) {
    return absl::InvalidArgumentError(absl::StrCat(out, ": a --to=", to, " file ends in ", ending));
  }
  return model.SaveWeights(out);
}

// The weights of PATH, and for a checkpoint what else it holds.
absl::StatusOr<CheckpointWeights> Read(const std::string& path) {
  if (WeightsFormatOf(path) != WeightsFormat::kOther) {
    CheckpointWeights out;
    out.path = path;
    RW_ASSIGN_OR_RETURN(out.weights, ReadWeightsFile(path));
    return out;
  }
  return ReadCheckpointWeights(path);
}

absl::Status Inspect(const std::string& path) {
  if (IsModel(path)) return InspectModel(path);
  RW_ASSIGN_OR_RETURN(const CheckpointWeights read, Read(path));
  const bool checkpoint = WeightsFormatOf(path) == WeightsFormat::kOther;
  std::cout << read.path << ": ";
  if (checkpoint) {
    const CheckpointManifest& m = read.manifest;
    std::cout << absl::StrFormat("Ringwork checkpoint, step %d (%d epochs and %d steps done)%s\n",
                                 m.step, m.epoch, m.step_in_epoch,
                                 m.final ? ", written at the end of training" : "");
    std::cout << "model fingerprint " << m.model_fingerprint << "\n";
  } else {
    std::cout << (WeightsFormatOf(path) == WeightsFormat::kNpz ? "NumPy .npz" : "safetensors")
              << " weights\n";
  }
  size_t width = 6;
  for (const NamedTensor& t : read.weights) width = std::max(width, t.name.size());
  std::cout << absl::StrFormat("%-*s  %-20s %s\n", width, "tensor", "shape", "parameters");
  int64_t total = 0;
  for (const NamedTensor& t : read.weights) {
    total += static_cast<int64_t>(t.values.size());
    std::cout << absl::StrFormat("%-*s  %-20s %s\n", width, t.name, ShapeText(t.shape),
                                 WithCommas(static_cast<int64_t>(t.values.size())));
  }
  std::cout << read.weights.size() << " tensors, " << WithCommas(total) << " parameters";
  if (checkpoint) {
    std::cout << "; " << read.optimizer_tensors << " optimizer slot tensors";
    for (const auto& [name, value] : read.manifest.counters)
      std::cout << ", " << name << " " << value;
  }
  std::cout << "\n";
  return absl::OkStatus();
}

absl::Status Export(const std::string& to, const std::string& path, const std::string& out) {
  static const std::set<std::string> formats = {"onnx", "tfjs",        "keras",
                                                "h5",   "safetensors", "npz"};
  if (!formats.count(to)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--to=", to, ": expected onnx, tfjs, keras, h5, safetensors or npz"));
  }
  if (IsModel(path)) {
    RW_RETURN_IF_ERROR(ExportModel(to, path, out));
    std::cout << "wrote " << out << " (" << to << ") from " << path << "\n";
    return absl::OkStatus();
  }
  if (to != "npz" && to != "safetensors") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--to=", to, ": ", path,
        " holds weights, not the architecture; export from a saved model (train --save_model, "
        "or SaveModel in C++), or to npz or safetensors"));
  }
  if (WeightsFormatOf(out) != (to == "npz" ? WeightsFormat::kNpz : WeightsFormat::kSafetensors)) {
    return absl::InvalidArgumentError(absl::StrCat(out, ": a --to=", to, " file ends in .", to));
  }
  RW_ASSIGN_OR_RETURN(const CheckpointWeights read, Read(path));
  RW_RETURN_IF_ERROR(WriteWeightsFile(read.weights, out));
  int64_t total = 0;
  for (const NamedTensor& t : read.weights) total += static_cast<int64_t>(t.values.size());
  std::cout << "wrote " << out << ": " << read.weights.size() << " tensors, " << WithCommas(total)
            << " parameters, from " << read.path << "\n";
  return absl::OkStatus();
}

struct PredictFlags {
  std::string data, features, output;
  int64_t batch_size = 256;
};

absl::Status Predict(const std::string& path, const PredictFlags& p,
                     const ClusterSourceFlags& source, const StrategyOptions& options) {
  if (p.data.empty() || !absl::EndsWith(p.output, ".npy")) {
    return absl::InvalidArgumentError("predict: --data=SPEC and --output=FILE.npy are needed");
  }
  if (p.batch_size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("--batch_size=", p.batch_size, ": positive"));
  }
  RW_ASSIGN_OR_RETURN(const ClusterConfig cluster, ResolveCluster(source, EnvFromProcess()));
  SetLogTask(cluster.task().ToString());
  RW_ASSIGN_OR_RETURN(std::unique_ptr<MultiWorkerMirroredStrategy> strategy,
                      MultiWorkerMirroredStrategy::Create(cluster, options));
  absl::Status status = [&]() -> absl::Status {
    auto scope = strategy->scope();
    RW_ASSIGN_OR_RETURN(Model model, LoadModel(path));
    if (model.output_names().size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": predict writes one output; this model has ",
                       model.output_names().size(), " (PredictOutputs in C++)"));
    }
    RW_ASSIGN_OR_RETURN(const PredictData data,
                        LoadPredictData(p.data, p.features,
                                        /*pack=*/model.signature().input_shapes.size() == 1));
    RW_ASSIGN_OR_RETURN(const Tensor y,
                        PredictAcrossWorkers(model, data.data, data.binding, p.batch_size));
    if (!strategy->is_chief()) return absl::OkStatus();
    NamedTensor out{"predictions", std::vector<int64_t>(y.shape().begin(), y.shape().end()),
                    std::vector<float>(y.data(), y.data() + y.size())};
    RW_RETURN_IF_ERROR(WriteNpyFile(out, p.output));
    std::cout << "wrote " << p.output << ": " << ShapeText(out.shape) << " predictions from "
              << path << " over " << strategy->num_replicas_in_sync() << " worker"
              << (strategy->num_replicas_in_sync() > 1 ? "s" : "") << "\n";
    return absl::OkStatus();
  }();
  if (!status.ok()) strategy->Abort(status);
  const absl::Status down = strategy->Shutdown();
  return status.ok() ? down : status;
}

int Main(int argc, char** argv) {
  SetLogTask("model");
  FlagSet flags(kUsage);
  std::string to;
  flags.String("to", &to, "export: onnx, tfjs, keras, h5, safetensors or npz");
  PredictFlags p;
  flags.String("data", &p.data, "predict: the data, as train's --train_data (tfrecord:GLOB, ...)");
  flags.String("features", &p.features, "predict: the features the model reads (NAME[:SHAPE],...)");
  flags.String("output", &p.output, "predict: the .npy file the chief writes");
  flags.Int("batch_size", &p.batch_size, "predict: examples per forward pass on each worker");
  ClusterSourceFlags source;
  source.Register(&flags);
  StrategyOptions options;
  options.runtime.Register(&flags);
  absl::StatusOr<std::vector<std::string>> args = flags.Parse(argc, argv);
  if (flags.help_requested()) {
    std::cout << flags.HelpText("model");
    return kOk;
  }
  if (!args.ok()) ExitWithStatus(args.status());
  if (absl::Status s = options.runtime.Finish(); !s.ok()) ExitWithStatus(s);
  const std::vector<std::string>& a = *args;
  absl::Status done;
  if (a.size() == 2 && a[0] == "inspect") {
    done = Inspect(a[1]);
  } else if (a.size() == 3 && a[0] == "export") {
    done = Export(to, a[1], a[2]);
  } else if (a.size() == 2 && a[0] == "predict") {
    done = Predict(a[1], p, source, options);
  } else {
    std::cerr << kUsage << "\n";
    done = absl::InvalidArgumentError(
        "expected: inspect PATH, export --to=FORMAT PATH OUT, or predict PATH --data=SPEC "
        "--output=FILE.npy");
  }
  if (!done.ok()) ExitWithStatus(done);
  return kOk;
}

}  // namespace
}  // namespace ringwork

int main(int argc, char** argv) { return ringwork::Main(argc, argv); }
