// One checkpoint file: a fixed header, a JSON manifest, then the tensors' bytes.
//
//   offset  0  magic "RWCKPT\r\n" (8 bytes)
//           8  format version, u32 little-endian (kCheckpointFormatVersion)
//          12  CRC32C of the manifest, u32
//          16  manifest bytes, u64
//          24  zeros up to 64
//          64  the manifest (JSON, below)
//         ...  the data section, from the first 64-byte boundary after the manifest:
//              each tensor at the (64-byte-aligned) offset the manifest gives
//
//   {"format_version": 1, "step": 120, "epoch": 2, "step_in_epoch": 3, "final": false,
//    "cluster_fingerprint": "...", "model_fingerprint": "...",
//    "counters": {"optimizer_iterations": 120, ...},
//    "tensors": [{"name": "dense/kernel", "dtype": "float32", "shape": [784, 256],
//                 "offset": 0, "bytes": 802816, "crc32c": 1234567}, ...]}
//
// Reading checks everything before anything is sized from the file: the header,
// the manifest's size against the file's, its CRC, every field's type and range,
// every tensor's extent against the file; then each tensor's CRC as it is read.
// Every failure is a DATA_LOSS status (exit 5) naming the file and, where there is
// one, the tensor or manifest field.
//
//   RW_RETURN_IF_ERROR(WriteCheckpointFile(path, manifest, tensors));   // + fsync
//   RW_ASSIGN_OR_RETURN(auto reader, CheckpointReader::Open(path));
//   for (const CheckpointTensor& t : reader->manifest().tensors) reader->Read(t, buffer);
#ifndef RINGWORK_CHECKPOINT_CHECKPOINT_FILE_H_
#define RINGWORK_CHECKPOINT_CHECKPOINT_FILE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tensor/dtype.h"

namespace ringwork {

inline constexpr uint32_t kCheckpointFormatVersion = 1;
inline constexpr size_t kCheckpointHeaderBytes = 64;
// Larger manifests are refused as corrupt (a model would need millions of tensors).
inline constexpr uint64_t kMaxManifestBytes = 64 << 20;

struct CheckpointTensor {
  std::string name;
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> shape;
  uint64_t offset = 0;  // From the start of the data section.
  uint64_t bytes = 0;
  uint32_t crc32c = 0;
  int64_t elements() const;
};

struct CheckpointManifest {
  int64_t step = 0;           // Training steps completed.
  int64_t epoch = 0;          // The epoch to resume in (0-based) ...
  int64_t step_in_epoch = 0;  // ... after this many of its steps.
  bool final = false;         // Written at the end of training.
  std::string cluster_fingerprint;
  std::string model_fingerprint;
  std::map<std::string, int64_t> counters;  // Optimizer iterations, shuffle seed, ...
  std::vector<CheckpointTensor> tensors;    // Filled by the writer and the reader.

  const CheckpointTensor* Find(const std::string& name) const;
};

// A tensor to write: its description and its bytes (dtype size x elements).
struct TensorData {
  std::string name;
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
};

// Writes `path` (which must not exist) with `manifest`'s fields and `tensors`, and
// fsyncs it. Not atomic on its own: CheckpointDirectory writes to a temporary name
// and renames. Errors are DATA_LOSS, naming the path and the system error.
absl::Status WriteCheckpointFile(const std::string& path, const CheckpointManifest& manifest,
                                 const std::vector<TensorData>& tensors);

class CheckpointReader {
 public:
  // Opens `path` and validates its header and manifest.
  static absl::StatusOr<std::unique_ptr<CheckpointReader>> Open(const std::string& path);
  ~CheckpointReader();
  CheckpointReader(const CheckpointReader&) = delete;
  CheckpointReader& operator=(const CheckpointReader&) = delete;

  const std::string& path() const { return path_; }
  const CheckpointManifest& manifest() const { return manifest_; }
  // Reads `tensor` (one of manifest().tensors) into `out` (tensor.bytes bytes) and
  // checks its CRC32C.
  absl::Status Read(const CheckpointTensor& tensor, void* out) const;

 private:
  CheckpointReader(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
  uint64_t data_start_ = 0;
  CheckpointManifest manifest_;
};

}  // namespace ringwork

#endif  // RINGWORK_CHECKPOINT_CHECKPOINT_FILE_H_
