// Test support: the float32 tensors of a checkpoint directory's latest checkpoint,
// and how far two such sets are apart (runs that should train alike).
//
//   absl::StatusOr<CheckpointTensors> a = LatestCheckpointTensors(dir_a);
//   absl::StatusOr<CheckpointTensors> b = LatestCheckpointTensors(dir_b);
//   CHECK(LargestDifference(*a, *b) <= 1e-5);   // -1: different tensors or shapes
#ifndef RINGWORK_TESTING_CHECKPOINT_TENSORS_H_
#define RINGWORK_TESTING_CHECKPOINT_TENSORS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ringwork {

using CheckpointTensors = std::map<std::string, std::vector<float>>;

absl::StatusOr<CheckpointTensors> LatestCheckpointTensors(const std::string& dir);
// The same of one checkpoint file.
absl::StatusOr<CheckpointTensors> ReadCheckpointTensors(const std::string& file);

// The largest absolute difference of corresponding values (NaN if one is NaN); -1
// when the names or sizes differ (or there is nothing to compare).
double LargestDifference(const CheckpointTensors& a, const CheckpointTensors& b);

// Makes `backup_dir` a BackupAndRestore directory holding `checkpoint_file` (a
// copy) as its latest: a run with --backup_dir resumes from it.
absl::Status MakeBackupOf(const std::string& checkpoint_file, const std::string& backup_dir);

}  // namespace ringwork

#endif  // RINGWORK_TESTING_CHECKPOINT_TENSORS_H_
