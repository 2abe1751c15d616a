// Model::SaveWeights and LoadWeights: Keras' save_weights / load_weights, in
// files other tools read (checkpoint/weights_file.h) or a Ringwork checkpoint.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/atomic_file.h"
#include "base/status_macros.h"
#include "checkpoint/checkpoint_directory.h"
#include "checkpoint/h5_file.h"
#include "checkpoint/weights_file.h"
#include "checkpoint/zip_archive.h"
#include "keras/keras_archive.h"
#include "keras/model.h"
#include "keras/training_state.h"

namespace ringwork {
namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  return ShapeString(Shape(shape.begin(), shape.end()));
}

// Keras 3's .weights.h5, or the weights in a .keras archive, under the model's
// variable names (the file knows them by layer class and position).
absl::StatusOr<std::vector<NamedTensor>> ReadKerasWeights(const Model& model,
                                                          const std::string& path) {
  std::string image;
  if (absl::EndsWith(path, ".keras")) {
    RW_ASSIGN_OR_RETURN(image, ReadZipMember(path, "model.weights.h5"));
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot read"));
    image.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  RW_ASSIGN_OR_RETURN(std::vector<NamedTensor> read, ReadH5Datasets(image, path));
  RW_ASSIGN_OR_RETURN(const auto layout, KerasH5Layout(model));
  const bool keras3 =
      read.empty() || std::any_of(read.begin(), read.end(), [](const auto& t) {
        return absl::StartsWith(t.name, "layers/") || absl::StartsWith(t.name, "optimizer/");
      });
  if (!keras3) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " is not in Keras 3's layout (", read[0].name,
        ": tf.keras 2's HDF5 format?); Ringwork reads Keras 3's .weights.h5 and .keras, "
        "or save the weights as .npz or .safetensors"));
  }
  std::vector<NamedTensor> out;
  for (NamedTensor& t : read) {
    if (absl::StartsWith(t.name, "optimizer/")) continue;  // Keras' optimizer state: not read.
    const auto it = layout.find(t.name);
    if (it == layout.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, " holds ", t.name, ", which the model does not have"));
    }
    t.name = it->second;
    out.push_back(std::move(t));
  }
  return out;
}

bool IsKerasWeights(const std::string& path) {
  return absl::EndsWith(path, ".h5") || absl::EndsWith(path, ".keras");
}

}  // namespace

absl::Status Model::SaveWeights(const std::string& path) {
  if (!built_) {
    return absl::FailedPreconditionError(
        "cannot save the weights of a model that is not built (call Fit, Evaluate or Build "
        "first)");
  }
  if (WeightsFormatOf(path) != WeightsFormat::kNpz &&
      WeightsFormatOf(path) != WeightsFormat::kSafetensors &&
      !absl::EndsWith(path, ".weights.h5")) {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": SaveWeights writes .npz, .safetensors or .weights.h5 (SaveKerasArchive writes .keras; "
        "ModelCheckpoint and BackupAndRestore write Ringwork checkpoints)"));
  }
  // The replicas are identical: the chief writes, every worker learns how it went.
  absl::Status written;
  if (strategy_->is_chief() && absl::EndsWith(path, ".weights.h5")) {
    absl::StatusOr<std::string> image = KerasWeightsH5(*this);
    written = image.ok() ? WriteFileAtomically(path, *image, "weights file") : image.status();
  } else if (strategy_->is_chief()) {
    std::vector<NamedTensor> tensors;
    for (const auto& layer : layers_) {
      for (const Variable* v : layer->weights()) {
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
  if (WeightsFormatOf(path) == WeightsFormat::kOther && !IsKerasWeights(path)) {
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
    absl::StatusOr<std::vector<NamedTensor>> file =
        IsKerasWeights(path) ? ReadKerasWeights(*this, path) : ReadWeightsFile(path);
    read = file.status();
    std::map<std::string, const NamedTensor*> by_name;
    for (size_t i = 0; read.ok() && i < file->size(); ++i) {
      const NamedTensor& t = (*file)[i];
      if (!by_name.emplace(t.name, &t).second) {
        read = absl::DataLossError(absl::StrCat(path, " holds ", t.name, " twice"));
      }
    }
    const std::map<std::string, const NamedTensor*> checked = by_name;
    for (const Variable* v : all) {
      if (!read.ok()) break;
      const auto it = by_name.find(v->name);
      const std::vector<int64_t> shape(v->value.shape().begin(), v->value.shape().end());
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
        // Into the existing buffers: kernels may hold on to where the weights live.
        const NamedTensor& t = *checked.at(v->name);
        std::copy(t.values.begin(), t.values.end(), v->value.data());
      }
    }
  }
  RW_RETURN_IF_ERROR(strategy_->ShareChiefStatus(read));
  return strategy_->BroadcastVariables(all);
}

}  // namespace ringwork
