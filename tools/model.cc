// model: look into what training produced, and take its weights out.
//
//   model inspect PATH
//       The tensors (name, shape, parameters) of a checkpoint (a file, or a
//       ModelCheckpoint/BackupAndRestore directory: its latest), a .npz or a
//       .safetensors weights file; for a checkpoint also where training was.
//   model export --to=npz|safetensors PATH OUT
//       The model's weights (not the optimizer's state) of PATH, under their Keras
//       names in Keras' layout, float32, to OUT.
#include <cstdio>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/exit_code.h"
#include "base/flags.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "checkpoint/weights_file.h"
#include "keras/training_state.h"

namespace ringwork {
namespace {

constexpr const char* kUsage =
    "model: look into what training produced, and take its weights out\n"
    "\n"
    "  model inspect PATH\n"
    "      the tensors of a checkpoint (a file, or a checkpoint or backup directory: its\n"
    "      latest), a .npz or a .safetensors weights file\n"
    "  model export --to=npz|safetensors PATH OUT\n"
    "      the model's weights of PATH under their Keras names, float32, to OUT\n"
    "\n"
    "Exit codes: 0 ok, 2 usage error or a missing file, 5 a corrupt file.";

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
  if (to == "onnx" || to == "tfjs") {
    return absl::InvalidArgumentError(
        absl::StrCat("--to=", to,
                     ": a checkpoint holds the weights, not the architecture; export from the "
                     "model (train --export_",
                     to, ", or Export", to == "onnx" ? "Onnx" : "Tfjs", " in C++)"));
  }
  if (to != "npz" && to != "safetensors") {
    return absl::InvalidArgumentError(
        absl::StrCat("--to=", to, ": this build exports npz and safetensors"));
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

int Main(int argc, char** argv) {
  SetLogTask("model");
  FlagSet flags(kUsage);
  std::string to;
  flags.String("to", &to, "export: npz or safetensors");
  absl::StatusOr<std::vector<std::string>> args = flags.Parse(argc, argv);
  if (flags.help_requested()) {
    std::cout << flags.HelpText("model");
    return kOk;
  }
  if (!args.ok()) ExitWithStatus(args.status());
  const std::vector<std::string>& a = *args;
  absl::Status done;
  if (a.size() == 2 && a[0] == "inspect") {
    done = Inspect(a[1]);
  } else if (a.size() == 3 && a[0] == "export") {
    done = Export(to, a[1], a[2]);
  } else {
    std::cerr << kUsage << "\n";
    done = absl::InvalidArgumentError("expected: inspect PATH, or export --to=FORMAT PATH OUT");
  }
  if (!done.ok()) ExitWithStatus(done);
  return kOk;
}

}  // namespace
}  // namespace ringwork

int main(int argc, char** argv) { return ringwork::Main(argc, argv); }
