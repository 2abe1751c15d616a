// Model's decisions and controls: the chief's decisions that every worker takes
// (stop, learning rate), what checkpoints keep of them and of the callbacks
// (SaveControls), the agreement that training ended, and what the model does
// when the ring changes under it (ElasticReplica). The training loop is in
// fit_loop.cc. Also: whether a model outside any scope may train alone.
#include "absl/strings/str_cat.h"
#include "base/exit_code.h"
#include "base/status_macros.h"
#include "base/termination.h"
#include "keras/model.h"
#include "keras/training_state.h"
#include "runtime/config/cluster_source.h"

namespace ringwork {

absl::Status Model::RefuseTrainingAloneInCluster() {
  std::optional<ClusterConfig> cluster = ThisProcessCluster();  // With the flags it parsed.
  if (!cluster.has_value()) {
    const EnvLookup env = EnvFromProcess();
    if (env("TF_CONFIG").value_or("").empty() && !env("SLURM_PROCID").has_value()) {
      return absl::OkStatus();  // No cluster: local mode.
    }
    // A cluster this process cannot read is one it does not train in.
    absl::StatusOr<ClusterConfig> resolved = ResolveCluster(ClusterSourceFlags(), env);
    if (!resolved.ok()) return absl::OkStatus();
    cluster = *std::move(resolved);
  }
  if (!cluster->in_ring() || cluster->roster_size() < 2) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "this model was created outside any strategy.scope(), but ", cluster->source(),
      " makes this task ", cluster->task().ToString(), " of ", cluster->roster_size(),
      " workers: each worker would train a model of its own. Create the model inside the "
      "strategy's scope (auto scope = strategy->scope(); then the model), or compile with "
      "CompileOptions::train_alone = true if training alone is meant"));
}

absl::Status Model::AgreeOnDecisions() {
  // The chief's [stop_training, learning rate] (a float's value survives the trip
  // through double): a sum to which the others add zeros (exact), not a broadcast,
  // so that no worker gets through it before every worker reached it. Elastic
  // training counts on that (every operation of Fit ends in an all-reduce).
  const bool chief = strategy_->rank() == 0;
  double decisions[2] = {chief && stop_training_ ? 1.0 : 0.0,
                         chief ? optimizer_->learning_rate() : 0.0};
  RW_RETURN_IF_ERROR(strategy_->Reduce(ReduceOp::kSum, decisions, 2));
  stop_training_ = decisions[0] != 0;
  const float rate = static_cast<float>(decisions[1]);
  if (rate != optimizer_->learning_rate()) return optimizer_->set_learning_rate(rate);
  return absl::OkStatus();
}

TrainingControls Model::SaveControls() const {
  TrainingControls controls;
  if (optimizer_ != nullptr && compile_options_.optimizer.learning_rate_schedule == nullptr) {
    controls[kLearningRateControl] = {optimizer_->learning_rate()};
  }
  if (stop_training_) controls[kStopTrainingControl] = {1.0};
  std::map<std::string, int> seen;
  for (const Callback* c : fit_callbacks_) {
    const std::string name = c->state_name();
    if (name.empty()) continue;
    const int n = ++seen[name];
    controls[n == 1 ? name : absl::StrCat(name, "#", n)] = c->SaveState();
  }
  return controls;
}

absl::Status Model::RestoreControls(const TrainingControls& controls) {
  const auto rate = controls.find(kLearningRateControl);
  if (rate != controls.end() && rate->second.size() == 1 &&
      compile_options_.optimizer.learning_rate_schedule == nullptr) {
    RW_RETURN_IF_ERROR(optimizer_->set_learning_rate(static_cast<float>(rate->second[0])));
  }
  const auto stop = controls.find(kStopTrainingControl);
  if (stop != controls.end() && stop->second.size() == 1 && stop->second[0] != 0)
    stop_training_ = true;
  std::map<std::string, int> seen;
  for (Callback* c : fit_callbacks_) {
    const std::string name = c->state_name();
    if (name.empty()) continue;
    const int n = ++seen[name];
    const auto it = controls.find(n == 1 ? name : absl::StrCat(name, "#", n));
    if (it == controls.end()) continue;  // Not in this checkpoint: it starts afresh.
    RW_RETURN_IF_ERROR(c->RestoreState(it->second));
  }
  return absl::OkStatus();
}

absl::Status Model::AgreeTrainingEnded(const absl::Status& ended) {
  // [workers whose end of training failed, workers that received SIGTERM]: a
  // SIGTERM while the final checkpoint was written, or a failed write anywhere,
  // keeps every worker's backup; the rerun resumes from it.
  const bool terminating = TerminationRequested();
  double counts[2] = {ended.ok() ? 0.0 : 1.0, terminating ? 1.0 : 0.0};
  RW_RETURN_IF_ERROR(strategy_->Reduce(ReduceOp::kSum, counts, 2));
  if (!ended.ok()) return ended;
  if (counts[0] > 0) {
    return absl::UnavailableError(absl::StrCat(
        static_cast<int64_t>(counts[0]),
        " other worker(s) failed to end training (see their logs: the final checkpoint?); "
        "the backup is kept: rerun the job to finish from it"));
  }
  if (counts[1] > 0) {
    return PreemptedError(absl::StrCat(
        "stopped at the end of training: ", static_cast<int64_t>(counts[1]),
        " worker(s) received SIGTERM", terminating ? " (this one did)" : "",
        " while it ended; the final checkpoint is written and the backup kept; rerun the job "
        "to finish from it"));
  }
  return absl::OkStatus();
}

void Model::LeaveRing() { reducer_.reset(); }

void Model::EnterRing() {
  reducer_ =
      strategy_->MakeGradientReducer(trainable_variables(), /*allow_overlap=*/!layer_collectives_);
}

absl::Status Model::AdoptStateOf(int root) { return AdoptTrainingStateOf(*this, root); }

}  // namespace ringwork
