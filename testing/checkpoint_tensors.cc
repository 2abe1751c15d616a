#include "testing/checkpoint_tensors.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "checkpoint/checkpoint_directory.h"
#include "checkpoint/checkpoint_file.h"

namespace ringwork {

absl::StatusOr<CheckpointTensors> LatestCheckpointTensors(const std::string& dir) {
  absl::StatusOr<std::string> latest = LatestCheckpoint(dir);
  if (!latest.ok()) return latest.status();
  return ReadCheckpointTensors(*latest);
}

absl::StatusOr<CheckpointTensors> ReadCheckpointTensors(const std::string& file) {
  absl::StatusOr<std::unique_ptr<CheckpointReader>> reader = CheckpointReader::Open(file);
  if (!reader.ok()) return reader.status();
  CheckpointTensors tensors;
  for (const CheckpointTensor& t : (*reader)->manifest().tensors) {
    if (t.dtype != DataType::kFloat32) continue;
    std::vector<float>& values = tensors[t.name];
    values.resize(static_cast<size_t>(t.elements()));
    absl::Status read = (*reader)->Read(t, values.data());
    if (!read.ok()) return read;
  }
  return tensors;
}

double LargestDifference(const CheckpointTensors& a, const CheckpointTensors& b) {
  if (a.empty() || a.size() != b.size()) return -1;
  double worst = 0;
  for (const auto& [name, values] : a) {
    const auto other = b.find(name);
    if (other == b.end() || other->second.size() != values.size()) return -1;
    for (size_t i = 0; i < values.size(); ++i) {
      const double difference = std::abs(static_cast<double>(values[i]) - other->second[i]);
      if (!(difference <= worst)) worst = difference;  // NaN and infinity count too.
    }
  }
  return worst;
}

absl::Status MakeBackupOf(const std::string& checkpoint_file, const std::string& backup_dir) {
  std::error_code error;
  std::filesystem::create_directories(backup_dir, error);
  const std::string name = std::filesystem::path(checkpoint_file).filename().string();
  std::filesystem::copy_file(checkpoint_file, backup_dir + "/" + name,
                             std::filesystem::copy_options::overwrite_existing, error);
  if (error)
    return absl::InternalError(absl::StrCat("copying ", checkpoint_file, ": ", error.message()));
  std::ofstream(backup_dir + "/latest") << name << "\n";
  return absl::OkStatus();
}

}  // namespace ringwork
