// A model's training state in checkpoints: its variables, its optimizer's slots
// and iteration count, its layers' random-draw counters, where training is, and
// what steers it (the learning rate, callbacks' state: float64 tensors
// "controls/NAME").
// Restoring it into a model compiled the same way continues training exactly where
// it stopped (bit-identical with the same thread counts).
//
// Only the chief writes. Restoring is collective: the chief reads and verifies the
// file, then broadcasts the state, so other workers need no shared file system;
// when the chief refuses the file, every worker fails with its message.
//
//   std::unique_ptr<CheckpointDirectory> dir;  // the chief's; nullptr on the others
//   if (strategy->is_chief()) {
//     RW_ASSIGN_OR_RETURN(dir, CheckpointDirectory::OpenForWriting("/ckpt", /*keep=*/3));
//   }
//   TrainPosition position;  // where training is
//   RW_ASSIGN_OR_RETURN(std::string path,
//                       SaveTrainingState(model, dir.get(), position, /*final=*/false));
//   absl::StatusOr<std::optional<LoadedCheckpoint>> at =
//       RestoreLatestTrainingState(model, "/ckpt");  // std::nullopt: none there yet
#ifndef RINGWORK_KERAS_TRAINING_STATE_H_
#define RINGWORK_KERAS_TRAINING_STATE_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "checkpoint/checkpoint_directory.h"
#include "checkpoint/checkpoint_file.h"
#include "checkpoint/weights_file.h"
#include "keras/model.h"

namespace ringwork {

// How the data was cut into steps when a checkpoint was written: its position
// (epoch, step) means the same examples again only under the same settings.
// -1: not recorded (a checkpoint of an older build).
struct TrainSettings {
  int64_t global_batch_size = -1;
  int64_t steps_per_epoch = -1;
  int64_t workers = -1;
  int64_t shard_policy = -1;       // AutoShardPolicy
  int64_t seed = -1;               // The agreed shuffle seed (63 bits).
  int64_t examples_per_pass = -1;  // Over every worker.

  static TrainSettings From(const TrainInfo& info);
  // Whether a run with `now` reads exactly the examples a run with these settings
  // would have read from the same position: the same data (examples per pass,
  // shuffle seed), global batch and epoch length, and (FILE, OFF: each worker's own
  // data) the same policy and workers; DATA cuts one common order, so any number of
  // workers maps exactly. Otherwise the first difference, "global batch size 256 in
  // the checkpoint, 512 now". A setting not recorded (-1, older builds) is not
  // compared. `position_recorded`: the checkpoint says where its data stood
  // (TrainPosition::data_pass): under DATA any global batch and epoch length
  // then name the same examples.
  absl::Status SameDataPosition(const TrainSettings& now, bool position_recorded = false) const;
};

// Writes the state on the chief (into `dir`, which only the chief needs) and
// returns the file's path there; other workers write nothing and return "".
// The model must be built. Collective (every worker calls it at the same point):
// first every worker checks that the replicas are still identical
// (strategy/replica_check.h), at the end every worker gets the chief's result (a
// failed write fails them all). `info`, when given, is recorded (TrainSettings).
absl::StatusOr<std::string> SaveTrainingState(Model& model, CheckpointDirectory* dir,
                                              const TrainPosition& position, bool final,
                                              const TrainInfo* info = nullptr);

// Restores the state from checkpoint `path` (read on the chief), with the
// learning rate it recorded. Errors: DATA_LOSS
// (exit 5) for a corrupt or missing file, FAILED_PRECONDITION (exit 7) for a
// checkpoint of another model, each naming the file and the tensor.
absl::StatusOr<TrainPosition> RestoreTrainingState(Model& model, const std::string& path);

struct LoadedCheckpoint {
  TrainPosition position;
  bool final = false;  // Written at the end of training.
  TrainSettings settings;
  // The learning rate and callbacks' state (Model::SaveControls) when it was
  // written; empty for LoadWeights and checkpoints of older builds.
  TrainingControls controls;
};

// Keras' load_weights: the variables only (the file's optimizer state is left
// alone, so a model compiled with any optimizer can load it). Collective, with
// the same errors as RestoreTrainingState.
absl::StatusOr<LoadedCheckpoint> LoadWeights(Model& model, const std::string& path);

// As RestoreTrainingState from the checkpoint `latest` names in `dir` (the chief's
// view), with the settings it recorded; nullopt on every worker when there is none.
absl::StatusOr<std::optional<LoadedCheckpoint>> RestoreLatestTrainingState(Model& model,
                                                                           const std::string& dir);

// Elastic training, after a regroup: every replica takes rank `root`'s training
// state (weights, optimizer slots and iterations, the learning rate and the
// callbacks' state), in memory. Collective.
absl::Status AdoptTrainingStateOf(Model& model, int root);

// What a checkpoint holds of the model, read without the model (tools/model):
// its weights (not the optimizer's slots nor fit's controls), float32, and its
// manifest (step, epoch, counters).
struct CheckpointWeights {
  std::string path;  // The file read (a directory's latest).
  CheckpointManifest manifest;
  std::vector<NamedTensor> weights;
  int64_t optimizer_tensors = 0;
};
// `path`: a checkpoint file, or a directory (ModelCheckpoint's, BackupAndRestore's)
// whose latest checkpoint is read. DATA_LOSS (exit 5) for a corrupt file, NOT_FOUND.
absl::StatusOr<CheckpointWeights> ReadCheckpointWeights(const std::string& path);

// A stable hash of the model's variable names and shapes ("a1b2c3d4e5f60718").
std::string ModelFingerprint(const Model& model);

// A hash of every variable's bytes: equal on two models exactly when their
// weights are bit-identical (replicas in sync, a resumed run equal to an
// uninterrupted one), up to hash collisions.
uint64_t WeightsFingerprint(const Model& model);

}  // namespace ringwork

#endif  // RINGWORK_KERAS_TRAINING_STATE_H_
