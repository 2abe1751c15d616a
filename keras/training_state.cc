#include "keras/training_state.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/crash_points.h"
#include "base/exit_code.h"
#include "base/fnv1a.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "observability/timeline.h"
#include "strategy/replica_check.h"

namespace ringwork {
namespace {

constexpr char kIterations[] = "optimizer_iterations";
constexpr char kGlobalBatch[] = "global_batch_size";
constexpr char kStepsPerEpoch[] = "steps_per_epoch";
constexpr char kWorkers[] = "workers";
constexpr char kShardPolicy[] = "shard_policy";
constexpr char kSeed[] = "shuffle_seed";
constexpr char kExamplesPerPass[] = "examples_per_pass";
// Where the next step's examples begin (TrainPosition::data_pass, data_offset):
// written when the steps do not say it (elastic training's per-replica batch).
constexpr char kDataPass[] = "data_pass";
constexpr char kDataOffset[] = "data_offset";
constexpr char kOptimizerPrefix[] = "optimizer/";
constexpr char kControlsPrefix[] = "controls/";
// Broadcast after the tensors: epoch, step in epoch, step, iterations, final, then
// the settings (TrainSettings, in its field order), then the data position.
constexpr int kHeaderWords = 13;

struct StateTensor {
  std::string name;
  Tensor* tensor;
};

// Weights (trainable and not), then each trainable variable's optimizer slots:
// the same list, in the same order, on every worker.
std::vector<StateTensor> StateTensors(Model& model, bool include_optimizer) {
  std::vector<StateTensor> state;
  for (Variable* v : model.weights()) state.push_back({v->name, &v->value});
  if (!include_optimizer) return state;
  for (Variable* v : model.trainable_variables()) {
    std::vector<Tensor>& slots = model.optimizer()->Slots(v);
    for (size_t i = 0; i < slots.size(); ++i) {
      state.push_back({absl::StrCat(kOptimizerPrefix, v->name, "/slot", i), &slots[i]});
    }
  }
  return state;
}

// Checkpoints written before use_bias=false stopped making a bias variable hold
// it (zeros) and its optimizer slots: LAYER/bias where the model has LAYER/kernel
// and no LAYER/bias. Restoring skips them when they are zeros, so those
// checkpoints still resume; a bias that is not zero is refused as before.
bool IsDroppedBias(const std::string& name, const std::set<std::string>& ours) {
  std::string variable = name;
  if (absl::StartsWith(variable, kOptimizerPrefix)) {
    variable = variable.substr(sizeof(kOptimizerPrefix) - 1);
    const size_t slot = variable.rfind("/slot");
    if (slot == std::string::npos) return false;
    variable.resize(slot);
  }
  if (!absl::EndsWith(variable, "/bias")) return false;
  const std::string layer = variable.substr(0, variable.size() - 5);
  return ours.count(layer + "/kernel") > 0 && ours.count(variable) == 0;
}

absl::Status MustBeBuilt(const Model& model, const char* doing) {
  if (model.built()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "cannot ", doing, " a model that is not built (call Fit, Evaluate or Build first)"));
}

// The chief's half of a restore: verify `path` against the model and read every
// tensor into `staged`, touching nothing of the model.
absl::Status ReadVerified(const std::string& path, const std::vector<StateTensor>& state,
                          bool include_optimizer, std::vector<Tensor>* staged,
                          int64_t header[kHeaderWords], TrainingControls* controls) {
  RW_ASSIGN_OR_RETURN(std::unique_ptr<CheckpointReader> reader, CheckpointReader::Open(path));
  const CheckpointManifest& m = reader->manifest();
  std::set<std::string> ours;
  for (const StateTensor& s : state) {
    ours.insert(s.name);
    const CheckpointTensor* t = m.Find(s.name);
    if (t == nullptr) {
      return MismatchError(absl::StrCat(
          "checkpoint ", path, " was written by another model: it has no tensor \"", s.name, "\""));
    }
    const Shape& want = s.tensor->shape();
    if (t->dtype != DataType::kFloat32 || t->shape != want) {
      return MismatchError(
          absl::StrCat("checkpoint ", path, " was written by another model: tensor \"", s.name,
                       "\" is ", DataTypeName(t->dtype), " ", ShapeString(t->shape),
                       " there, float32 ", ShapeString(want), " in this model"));
    }
  }
  for (const CheckpointTensor& t : m.tensors) {
    if (absl::StartsWith(t.name, kControlsPrefix)) {
      if (!include_optimizer) continue;
      if (t.dtype != DataType::kFloat64 || t.shape.size() != 1) {
        return MismatchError(absl::StrCat("checkpoint ", path, ": tensor \"", t.name, "\" is ",
                                          DataTypeName(t.dtype), " ", ShapeString(t.shape),
                                          ", expected float64 [n]"));
      }
      std::vector<double>& values = (*controls)[t.name.substr(sizeof(kControlsPrefix) - 1)];
      values.resize(static_cast<size_t>(t.shape[0]));
      RW_RETURN_IF_ERROR(reader->Read(t, values.data()));
      continue;
    }
    if (!include_optimizer && absl::StartsWith(t.name, kOptimizerPrefix)) continue;
    if (!ours.count(t.name) && IsDroppedBias(t.name, ours) && t.dtype == DataType::kFloat32) {
      std::vector<float> values(static_cast<size_t>(NumElements(t.shape)));
      RW_RETURN_IF_ERROR(reader->Read(t, values.data()));
      if (std::all_of(values.begin(), values.end(), [](float v) { return v == 0.0f; })) continue;
    }
    if (!ours.count(t.name)) {
      return MismatchError(absl::StrCat("checkpoint ", path,
                                        " was written by another model: this model has no \"",
                                        t.name, "\""));
    }
  }
  staged->clear();
  for (const StateTensor& s : state) {
    staged->emplace_back(s.tensor->shape());
    RW_RETURN_IF_ERROR(reader->Read(*m.Find(s.name), staged->back().data()));
  }
  auto counter = [&](const char* name, int64_t absent) {
    const auto it = m.counters.find(name);
    return it == m.counters.end() ? absent : it->second;
  };
  header[0] = m.epoch;
  header[1] = m.step_in_epoch;
  header[2] = m.step;
  header[3] = counter(kIterations, m.step);
  header[4] = m.final ? 1 : 0;
  header[5] = counter(kGlobalBatch, -1);
  header[6] = counter(kStepsPerEpoch, -1);
  header[7] = counter(kWorkers, -1);
  header[8] = counter(kShardPolicy, -1);
  header[9] = counter(kSeed, -1);
  header[10] = counter(kExamplesPerPass, -1);
  header[11] = counter(kDataPass, -1);
  header[12] = counter(kDataOffset, -1);
  return absl::OkStatus();
}

}  // namespace

std::string ModelFingerprint(const Model& model) {
  uint64_t h = kFnv1aOffset;
  for (const Variable* v : model.weights()) {
    h = Fnv1a64(absl::StrCat(v->name, " ", ShapeString(v->value.shape()), ";"), h);
  }
  return absl::StrFormat("%016x", h);
}

uint64_t WeightsFingerprint(const Model& model) {
  uint64_t h = kFnv1aOffset;
  for (const Variable* v : model.weights()) {
    h = Fnv1a64(v->value.data(), static_cast<size_t>(v->value.size()) * sizeof(float), h);
  }
  return h;
}

TrainSettings TrainSettings::From(const TrainInfo& info) {
  return TrainSettings{info.global_batch_size,
                       info.steps_per_epoch,
                       info.replicas,
                       static_cast<int64_t>(info.shard_policy),
                       static_cast<int64_t>(info.shuffle_seed & 0x7fffffffffffffffull),
                       info.examples_per_pass};
}

absl::Status TrainSettings::SameDataPosition(const TrainSettings& now,
                                             bool position_recorded) const {
  auto policy = [](int64_t p) {
    return std::string(AutoShardPolicyName(static_cast<AutoShardPolicy>(p)));
  };
  auto differ = [](const char* what, const std::string& then, const std::string& current) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " ", then, " in the checkpoint, ", current, " now"));
  };
  if (examples_per_pass >= 0 && examples_per_pass != now.examples_per_pass) {
    return differ("examples per pass", absl::StrCat(examples_per_pass),
                  absl::StrCat(now.examples_per_pass));
  }
  if (seed >= 0 && seed != now.seed) {
    return differ("shuffle seed", absl::StrCat(seed), absl::StrCat(now.seed));
  }
  if (position_recorded && now.shard_policy == static_cast<int64_t>(AutoShardPolicy::kData) &&
      (shard_policy < 0 || shard_policy == now.shard_policy)) {
    return absl::OkStatus();  // (pass, example) names the same examples under any batch.
  }
  if (global_batch_size >= 0 && global_batch_size != now.global_batch_size) {
    return differ("global batch size", absl::StrCat(global_batch_size),
                  absl::StrCat(now.global_batch_size));
  }
  if (steps_per_epoch >= 0 && steps_per_epoch != now.steps_per_epoch) {
    return differ("steps per epoch", absl::StrCat(steps_per_epoch),
                  absl::StrCat(now.steps_per_epoch));
  }
  if (shard_policy >= 0 && shard_policy != now.shard_policy) {
    return differ("shard policy", policy(shard_policy), policy(now.shard_policy));
  }
  if (workers >= 0 && workers != now.workers &&
      now.shard_policy != static_cast<int64_t>(AutoShardPolicy::kData)) {
    return differ(absl::StrCat("with shard policy ", policy(now.shard_policy), ", workers").c_str(),
                  absl::StrCat(workers), absl::StrCat(now.workers));
  }
  return absl::OkStatus();
}

namespace {

// The chief's half of a save: the file.
absl::StatusOr<std::string> WriteOnChief(Model& model, CheckpointDirectory* dir,
                                         const TrainPosition& position, bool final,
                                         const TrainInfo* info) {
  if (dir == nullptr) return absl::InternalError("the chief saves without a checkpoint directory");
  TimelineSpan span("checkpoint", "checkpoint write");
  span.Arg("step", position.step);
  CheckpointManifest manifest;
  manifest.step = position.step;
  manifest.epoch = position.epoch;
  manifest.step_in_epoch = position.step_in_epoch;
  manifest.final = final;
  manifest.cluster_fingerprint = model.strategy()->cluster().Fingerprint();
  manifest.model_fingerprint = ModelFingerprint(model);
  manifest.counters[kIterations] = model.optimizer()->iterations();
  if (position.data_pass >= 0) {
    manifest.counters[kDataPass] = position.data_pass;
    manifest.counters[kDataOffset] = position.data_offset;
  }
  if (info != nullptr) {
    const TrainSettings settings = TrainSettings::From(*info);
    manifest.counters[kGlobalBatch] = settings.global_batch_size;
    manifest.counters[kStepsPerEpoch] = settings.steps_per_epoch;
    manifest.counters[kWorkers] = settings.workers;
    manifest.counters[kShardPolicy] = settings.shard_policy;
    manifest.counters[kSeed] = settings.seed;
    manifest.counters[kExamplesPerPass] = settings.examples_per_pass;
  }
  std::vector<TensorData> tensors;
  for (const StateTensor& s : StateTensors(model, /*include_optimizer=*/true)) {
    tensors.push_back({s.name, DataType::kFloat32, s.tensor->shape(), s.tensor->data()});
  }
  const TrainingControls controls = model.SaveControls();
  for (const auto& [name, values] : controls) {
    tensors.push_back({absl::StrCat(kControlsPrefix, name),
                       DataType::kFloat64,
                       {static_cast<int64_t>(values.size())},
                       values.data()});
  }
  RW_ASSIGN_OR_RETURN(std::string path, dir->Write(manifest, tensors));
  RW_VLOG(1) << "saved " << path << " (step " << position.step << ")";
  return path;
}

}  // namespace

absl::StatusOr<std::string> SaveTrainingState(Model& model, CheckpointDirectory* dir,
                                              const TrainPosition& position, bool final,
                                              const TrainInfo* info) {
  RW_RETURN_IF_ERROR(MustBeBuilt(model, "save"));
  // A checkpoint of replicas that drifted apart would hide it: compare first.
  RW_RETURN_IF_ERROR(CheckReplicasIdentical(
      model.strategy(), model.weights(), absl::StrCat("before checkpoint step ", position.step)));
  absl::StatusOr<std::string> written = std::string();
  if (model.strategy()->is_chief()) {
    written = WriteOnChief(model, dir, position, final, info);
  } else {
    CrashPoint("checkpoint_write");  // Tests: a worker dies while the chief writes.
  }
  // Every worker waits for the chief's file and learns how it went, so that none
  // moves on (or exits) while the chief still needs it.
  RW_RETURN_IF_ERROR(model.strategy()->ShareChiefStatus(written.status()));
  return written;
}

namespace {

// The chief's controls to every worker: their names are the chief's (a worker
// may lack a callback the chief has), so they travel encoded as int64 words:
// count, then per control its name's length, its bytes (a word each) and its
// values' bits.
absl::Status BroadcastControls(Communicator* comm, int root, TrainingControls* controls) {
  const bool chief = comm->rank() == root;
  std::vector<int64_t> words;
  if (chief) {
    words.push_back(static_cast<int64_t>(controls->size()));
    for (const auto& [name, values] : *controls) {
      words.push_back(static_cast<int64_t>(name.size()));
      for (char c : name) words.push_back(static_cast<unsigned char>(c));
      words.push_back(static_cast<int64_t>(values.size()));
      for (double v : values) {
        int64_t bits;
        std::memcpy(&bits, &v, sizeof(bits));
        words.push_back(bits);
      }
    }
  }
  int64_t size = static_cast<int64_t>(words.size());
  RW_RETURN_IF_ERROR(comm->Broadcast(&size, 1, DataType::kInt64, root));
  words.resize(static_cast<size_t>(size));
  RW_RETURN_IF_ERROR(comm->Broadcast(words.data(), size, DataType::kInt64, root));
  if (chief) return absl::OkStatus();
  controls->clear();
  size_t at = 0;
  const int64_t count = words.at(at++);
  for (int64_t i = 0; i < count; ++i) {
    const size_t length = static_cast<size_t>(words.at(at++));
    std::string name;
    for (size_t k = 0; k < length; ++k) name += static_cast<char>(words.at(at++));
    std::vector<double>& values = (*controls)[name];
    values.resize(static_cast<size_t>(words.at(at++)));
    for (double& v : values) {
      const int64_t bits = words.at(at++);
      std::memcpy(&v, &bits, sizeof(v));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<LoadedCheckpoint> Restore(Model& model, const std::string& path,
                                         bool include_optimizer) {
  RW_RETURN_IF_ERROR(MustBeBuilt(model, "restore"));
  MultiWorkerMirroredStrategy* strategy = model.strategy();
  const std::vector<StateTensor> state = StateTensors(model, include_optimizer);
  std::vector<Tensor> staged;
  int64_t header[kHeaderWords] = {0, 0, 0, 0, 0, -1, -1, -1, -1, -1, -1, -1, -1};
  TrainingControls controls;
  absl::Status read;
  if (strategy->is_chief())
    read = ReadVerified(path, state, include_optimizer, &staged, header, &controls);
  RW_RETURN_IF_ERROR(strategy->ShareChiefStatus(read));
  if (strategy->is_chief()) {
    // Into the existing buffers: kernels may hold on to where the weights live.
    for (size_t i = 0; i < state.size(); ++i) {
      std::copy(staged[i].data(), staged[i].data() + staged[i].size(), state[i].tensor->data());
    }
  }
  Communicator* comm = strategy->communicator();
  for (const StateTensor& s : state) {
    RW_RETURN_IF_ERROR(comm->Broadcast(s.tensor->data(), s.tensor->size(), DataType::kFloat32, 0));
  }
  RW_RETURN_IF_ERROR(comm->Broadcast(header, kHeaderWords, DataType::kInt64, 0));
  if (include_optimizer) {
    model.optimizer()->set_iterations(header[3]);
    model.SetTrainingStep(header[2]);
    RW_RETURN_IF_ERROR(BroadcastControls(comm, /*root=*/0, &controls));
  }
  return LoadedCheckpoint{
      TrainPosition{header[0], header[1], header[2], header[11], header[12]}, header[4] != 0,
      TrainSettings{header[5], header[6], header[7], header[8], header[9], header[10]},
      std::move(controls)};
}

}  // namespace

absl::Status AdoptTrainingStateOf(Model& model, int root) {
  RW_RETURN_IF_ERROR(MustBeBuilt(model, "share the training state of"));
  Communicator* comm = model.strategy()->communicator();
  for (const StateTensor& s : StateTensors(model, /*include_optimizer=*/true)) {
    RW_RETURN_IF_ERROR(
        comm->Broadcast(s.tensor->data(), s.tensor->size(), DataType::kFloat32, root));
  }
  int64_t iterations = model.optimizer()->iterations();
  RW_RETURN_IF_ERROR(comm->Broadcast(&iterations, 1, DataType::kInt64, root));
  model.optimizer()->set_iterations(iterations);
  TrainingControls controls;
  if (comm->rank() == root) controls = model.SaveControls();
  RW_RETURN_IF_ERROR(BroadcastControls(comm, root, &controls));
  if (comm->rank() == root) return absl::OkStatus();
  model.set_stop_training(false);  // The root's, which the controls hold only when true.
  return model.RestoreControls(controls);
}

absl::StatusOr<TrainPosition> RestoreTrainingState(Model& model, const std::string& path) {
  RW_ASSIGN_OR_RETURN(LoadedCheckpoint loaded, Restore(model, path, /*include_optimizer=*/true));
  // The learning rate as it was (a plateau may have lowered it); callbacks' state
  // needs a fit to go to (BackupAndRestore gives it there).
  RW_RETURN_IF_ERROR(model.RestoreControls(loaded.controls));
  return loaded.position;
}

absl::StatusOr<LoadedCheckpoint> LoadWeights(Model& model, const std::string& path) {
  return Restore(model, path, /*include_optimizer=*/false);
}

absl::StatusOr<CheckpointWeights> ReadCheckpointWeights(const std::string& path) {
  CheckpointWeights out;
  out.path = path;
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    if (error) return absl::InvalidArgumentError(absl::StrCat(path, ": ", error.message()));
    return absl::NotFoundError(absl::StrCat(path, ": no such file or directory"));
  }
  if (std::filesystem::is_directory(path, error)) {
    RW_ASSIGN_OR_RETURN(out.path, LatestCheckpoint(path));
  }
  RW_ASSIGN_OR_RETURN(std::unique_ptr<CheckpointReader> reader, CheckpointReader::Open(out.path));
  out.manifest = reader->manifest();
  for (const CheckpointTensor& t : out.manifest.tensors) {
    if (absl::StartsWith(t.name, kControlsPrefix)) continue;
    if (absl::StartsWith(t.name, kOptimizerPrefix)) {
      ++out.optimizer_tensors;
      continue;
    }
    if (t.dtype != DataType::kFloat32) {
      return absl::DataLossError(absl::StrCat(out.path, ": tensor ", t.name, " is not float32"));
    }
    NamedTensor w{t.name, t.shape, std::vector<float>(static_cast<size_t>(t.elements()))};
    RW_RETURN_IF_ERROR(reader->Read(t, w.values.data()));
    out.weights.push_back(std::move(w));
  }
  return out;
}

absl::StatusOr<std::optional<LoadedCheckpoint>> RestoreLatestTrainingState(Model& model,
                                                                           const std::string& dir) {
  MultiWorkerMirroredStrategy* strategy = model.strategy();
  absl::StatusOr<std::string> latest = std::string();
  if (strategy->is_chief()) latest = LatestCheckpoint(dir);
  const bool none = strategy->is_chief() && absl::IsNotFound(latest.status());
  RW_RETURN_IF_ERROR(strategy->ShareChiefStatus(none ? absl::OkStatus() : latest.status()));
  int64_t found = strategy->is_chief() && !none ? 1 : 0;
  RW_RETURN_IF_ERROR(strategy->communicator()->Broadcast(&found, 1, DataType::kInt64, 0));
  if (!found) return std::optional<LoadedCheckpoint>();
  RW_ASSIGN_OR_RETURN(LoadedCheckpoint loaded, Restore(model, *latest, /*include_optimizer=*/true));
  if (strategy->is_chief()) RW_LOG(INFO) << "restored " << *latest;
  return std::optional<LoadedCheckpoint>(loaded);
}

}  // namespace ringwork
