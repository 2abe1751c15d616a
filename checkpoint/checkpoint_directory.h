// A directory of checkpoints that one job writes: ckpt-<step>.rwckpt files and a
// `latest` file naming the newest. Writes are atomic: a checkpoint is written to a
// temporary name, fsynced, renamed, and the directory fsynced; then `latest` is
// replaced the same way. A crash at any moment leaves the previous checkpoint and
// `latest` intact (and a temporary file that the next writer removes).
//
//   RW_ASSIGN_OR_RETURN(auto dir, CheckpointDirectory::OpenForWriting("/ckpt", 3));
//   RW_ASSIGN_OR_RETURN(std::string path, dir->Write(manifest, tensors));
//   ...
//   absl::StatusOr<std::string> latest = LatestCheckpoint("/ckpt");  // any process
//
// A lock (flock on <dir>/.lock, released when the process ends, however it ends)
// stops two jobs from writing one directory: the second gets a config error
// (exit 2) naming the directory and the holder's pid.
#ifndef RINGWORK_CHECKPOINT_CHECKPOINT_DIRECTORY_H_
#define RINGWORK_CHECKPOINT_CHECKPOINT_DIRECTORY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "checkpoint/checkpoint_file.h"

namespace ringwork {

class CheckpointDirectory {
 public:
  // Creates `dir` (and its parents) if needed, takes its lock and removes the
  // temporary files a crashed writer left. Keeps the newest `keep` checkpoints.
  // A directory of another user, or one every user may write, is refused
  // (INVALID_ARGUMENT, exit 2); files are created anew, never through a link.
  static absl::StatusOr<std::unique_ptr<CheckpointDirectory>> OpenForWriting(const std::string& dir,
                                                                             int keep);
  ~CheckpointDirectory();  // Releases the lock.
  CheckpointDirectory(const CheckpointDirectory&) = delete;
  CheckpointDirectory& operator=(const CheckpointDirectory&) = delete;

  const std::string& dir() const { return dir_; }
  // Writes the checkpoint of `manifest.step`, points `latest` at it and removes
  // checkpoints beyond `keep`. Returns its path.
  absl::StatusOr<std::string> Write(const CheckpointManifest& manifest,
                                    const std::vector<TensorData>& tensors);
  // Removes every checkpoint and `latest` (a finished BackupAndRestore).
  absl::Status RemoveAll();
  // From now on Write refuses a step below `step` (UNAVAILABLE, writing
  // nothing): a writer taking over from another (a new chief in elastic
  // training) never moves `latest` behind what the other one wrote.
  void RefuseStepsBefore(int64_t step) { min_step_ = step; }
  // The step of the checkpoint `latest` names (-1: none, or unreadable).
  static int64_t LatestStep(const std::string& dir);

 private:
  CheckpointDirectory(std::string dir, int keep, int lock_fd)
      : dir_(std::move(dir)), keep_(keep), lock_fd_(lock_fd) {}
  std::string dir_;
  int keep_;
  int lock_fd_;
  int64_t min_step_ = -1;
};

// "ckpt-000000000120.rwckpt" for step 120.
std::string CheckpointFileName(int64_t step);
// The checkpoint files in `dir`, oldest first.
std::vector<std::string> ListCheckpoints(const std::string& dir);
// The path of the checkpoint `latest` names in `dir`. NOT_FOUND when `dir` or its
// `latest` does not exist (no checkpoint yet); DATA_LOSS when `latest` is garbled
// or names a file that is missing.
absl::StatusOr<std::string> LatestCheckpoint(const std::string& dir);

}  // namespace ringwork

#endif  // RINGWORK_CHECKPOINT_CHECKPOINT_DIRECTORY_H_
