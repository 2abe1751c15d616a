// A model's weights in files other tools read: NumPy's .npz (np.load) and
// safetensors (Hugging Face's format), each tensor float32 under its Keras
// variable name ("dense/kernel", "batch_normalization/moving_mean") in Keras'
// layout (Dense kernels [in, out], Conv2D kernels [height, width, in, out]).
//
//   std::vector<NamedTensor> weights = {{"dense/kernel", {784, 10}, values}, ...};
//   RW_RETURN_IF_ERROR(WriteWeightsFile(weights, "model.npz"));      // or .safetensors
//   RW_ASSIGN_OR_RETURN(std::vector<NamedTensor> read, ReadWeightsFile("model.npz"));
//
// Writes are atomic (PATH.tmp, then a rename). Reading checks what it sizes from
// the file against the file; errors are DATA_LOSS (exit 5) naming the file and
// the tensor (a shape too large, a name twice, safetensors data with holes),
// NOT_FOUND for a missing file, INVALID_ARGUMENT for another extension, a file
// that cannot be opened or a dtype other than float32/float64.
#ifndef RINGWORK_CHECKPOINT_WEIGHTS_FILE_H_
#define RINGWORK_CHECKPOINT_WEIGHTS_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ringwork {

struct NamedTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

enum class WeightsFormat { kNpz, kSafetensors, kTfjs, kOther };
// By the path's extension: ".npz", ".safetensors", ".json" (a TF.js layers
// model's model.json: its weights manifest and shards, read only), else kOther.
WeightsFormat WeightsFormatOf(const std::string& path);

absl::Status WriteWeightsFile(const std::vector<NamedTensor>& tensors, const std::string& path);
// In the file's order: the archive's members, the safetensors header's entries.
absl::StatusOr<std::vector<NamedTensor>> ReadWeightsFile(const std::string& path);

// One array as NumPy's .npy (np.load), float32, atomically.
absl::Status WriteNpyFile(const NamedTensor& tensor, const std::string& path);

}  // namespace ringwork

#endif  // RINGWORK_CHECKPOINT_WEIGHTS_FILE_H_
