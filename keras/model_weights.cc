// Model::SaveWeights and LoadWeights: Keras' save_weights / load_weights, in
// files other tools read (checkpoint/weights_file.h) or a Ringwork checkpoint.
#include <filesystem>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "checkpoint/checkpoint_directory.h"
#include "checkpoint/weights_file.h"
#include "keras/model.h"
#include "keras/training_state.h"

namespace ringwork {
namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  return ShapeString(Shape(shape.begin(), shape.end()));
}

}  // namespace

absl::Status Model::SaveWeights(const std::string& path) {
  if (!built_) {
    return absl::FailedPreconditionError(
        "cannot save the weights of a model that is not built (call Fit, Evaluate or Build "
        "first)");
  }
  if (WeightsFormatOf(path) != WeightsFormat::kNpz &&
      WeightsFormatOf(path) != WeightsFormat::kSafetensors) {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": SaveWeights writes .npz or .safetensors (ModelCheckpoint and BackupAndRestore "
        "write Ringwork checkpoints)"));
  }
  // The replicas are identical: the chief writes, every worker learns how it went.
  absl::Status written;
  if (strategy_->is_chief()) {
    std::vector<NamedTensor> tensors;
    for (const auto& layer : layers_) {
      for (const Variable* v : layer->weights()) {
        if (IsUnusedBias(*layer, *v)) continue;  // Keras has none.
        tensors.push_back({v->name,
                           std::vector<int64_t>(v->value.shape().begin(), v->value.shape().end()),
                           std::vector<float>(v->value.data(), v->value.data() + v->size())});
      }
    }
    written = WriteWeightsFile(tensors, path);
  }
  return strategy_->ShareChiefStatus(written);
}

absl::Status Model::LoadWeights(const std::string& path) {
  if (!built_) {
    return absl::FailedPreconditionError(
        "cannot load weights into a model that is not built (call Build first)");
  }
  if (WeightsFormatOf(path) == WeightsFormat::kOther) {
    // A Ringwork checkpoint, or a directory of them: its latest (the chief's view).
    std::string file = path;
    absl::Status found;
    std::error_code error;
    if (strategy_->is_chief() && std::filesystem::is_directory(path, error)) {
      absl::StatusOr<std::string> latest = LatestCheckpoint(path);
      found = latest.status();
      if (latest.ok()) file = *latest;
    }
    RW_RETURN_IF_ERROR(strategy_->ShareChiefStatus(found));
    return ringwork::LoadWeights(*this, file).status();  // Read on the chief.
  }
  const std::vector<Variable*> all = weights();
  // The chief reads and checks the whole file before it changes anything.
  absl::Status read;
  if (strategy_->is_chief()) {
    absl::StatusOr<std::vector<NamedTensor>> file = ReadWeightsFile(path);
    read = file.status();
    std::map<std::string, const NamedTensor*> by_name;
    if (read.ok()) {
      for (const NamedTensor& t : *file) by_name[t.name] = &t;
    }
    std::set<const Variable*> optional;  // Biases use_bias=false keeps at zero.
    for (const auto& layer : layers_) {
      for (const Variable* v : layer->weights()) {
        if (IsUnusedBias(*layer, *v)) optional.insert(v);
      }
    }
    for (const Variable* v : all) {
      if (!read.ok()) break;
      const auto it = by_name.find(v->name);
      const std::vector<int64_t> shape(v->value.shape().begin(), v->value.shape().end());
      if (it == by_name.end() && optional.count(v)) continue;
      if (it == by_name.end()) {
        read = absl::FailedPreconditionError(absl::StrCat(
            path, " has no tensor ", v->name, " (the model's, of shape ", ShapeText(shape), ")"));
      } else if (it->second->shape != shape) {
        read = absl::FailedPreconditionError(
            absl::StrCat(path, ": tensor ", v->name, " has shape ", ShapeText(it->second->shape),
                         "; the model's has shape ", ShapeText(shape)));
      } else {
        by_name.erase(it);
      }
    }
    if (read.ok() && !by_name.empty()) {
      read = absl::FailedPreconditionError(
          absl::StrCat(path, " holds ", by_name.begin()->first, ", which the model does not have (",
                       by_name.size(), " such tensor", by_name.size() > 1 ? "s" : "", ")"));
    }
    if (read.ok()) {
      for (Variable* v : all) {
        for (const NamedTensor& t : *file) {
          // Into the existing buffers: kernels may hold on to where the weights live.
          if (t.name == v->name) std::copy(t.values.begin(), t.values.end(), v->value.data());
        }
      }
    }
  }
  RW_RETURN_IF_ERROR(strategy_->ShareChiefStatus(read));
  return strategy_->BroadcastVariables(all);
}

}  // namespace ringwork
