#include "strategy/elastic_loop.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "base/fnv1a.h"
#include "base/logging.h"
#include "base/status_macros.h"

namespace ringwork {
namespace {

constexpr char kRingChangePayload[] = "ringwork/elastic-ring-change";

}  // namespace

absl::Status RingChangedError() {
  absl::Status status = absl::AbortedError(
      "elastic training: workers wait to join; return this from the loop body so that "
      "RunElastic lets them in");
  status.SetPayload(kRingChangePayload, absl::Cord("1"));
  return status;
}

bool IsRingChange(const absl::Status& status) {
  return status.GetPayload(kRingChangePayload).has_value();
}

void ElasticState::Track(const std::string& name, Tensor* tensor) {
  tensors_.push_back({name, tensor});
}

int64_t ElasticState::ShapeHash() const {
  std::string text;
  for (const auto& [name, tensor] : tensors_)
    absl::StrAppend(&text, name, ":", tensor->size(), ";");
  for (const auto& [name, value] : counters_) absl::StrAppend(&text, name, ";");
  return static_cast<int64_t>(Fnv1a64(text) >> 1);
}

absl::Status ElasticState::Commit() {
  ++commits_;
  if (!strategy_->elastic() || strategy_->joining()) return absl::OkStatus();
  int64_t waiting = strategy_->joiners_waiting();
  RW_RETURN_IF_ERROR(
      strategy_->communicator()->AllReduce(&waiting, 1, DataType::kInt64, ReduceOp::kSum));
  return waiting > 0 ? RingChangedError() : absl::OkStatus();
}

absl::Status ElasticState::AdoptStateOf(int root) {
  Communicator* comm = strategy_->communicator();
  for (const auto& [name, tensor] : tensors_) {
    RW_RETURN_IF_ERROR(comm->Broadcast(tensor->data(), static_cast<size_t>(tensor->size()),
                                       DataType::kFloat32, root));
  }
  std::vector<int64_t> values;
  for (const auto& [name, value] : counters_) values.push_back(value);
  if (!values.empty()) {
    RW_RETURN_IF_ERROR(comm->Broadcast(values.data(), values.size(), DataType::kInt64, root));
  }
  size_t i = 0;
  for (auto& [name, value] : counters_) value = values[i++];
  return absl::OkStatus();
}

namespace {

// After `failure` (or a ring change) ended the body: the ring changes and every
// member agrees where to go on (up to 3 failures in a row are survived).
absl::Status ChangeRing(ElasticRun* run, ElasticState* state, absl::Status failure,
                        bool has_state = true) {
  MultiWorkerMirroredStrategy* strategy = state->strategy();
  if (state->ShapeHash() != run->shape().model) {
    return absl::FailedPreconditionError(
        "ElasticState: a tensor or counter was tracked after RunElastic started; track "
        "everything before, so that every worker (a joiner too) has the same state");
  }
  const int before = strategy->num_replicas_in_sync();
  std::vector<double> carried(1, 0.0);
  int64_t slowest = 0;
  const std::string cause(failure.message());
  for (int round = 1;; ++round) {
    // A joiner that has not taken the state yet has none to offer (as in fit).
    run->set_progress(has_state ? state->commits() : -1);
    if (IsRingChange(failure)) {
      failure = run->LetJoinersIn(&slowest, &carried);
    } else if (run->CanSurvive(failure) && round <= 3) {
      failure = run->SurvivePeerFailure(failure, &slowest, &carried);
    } else {
      return failure;
    }
    if (failure.ok()) break;
  }
  state->set_commits(run->progress());
  std::string change;
  if (!strategy->departed().empty()) {
    change = absl::StrCat(strategy->departed(), " left: ", cause, "; ");
  }
  if (!strategy->arrived().empty()) absl::StrAppend(&change, strategy->arrived(), " joined; ");
  RW_LOG(WARNING) << "generation " << strategy->generation() << ": " << change
                  << strategy->num_replicas_in_sync() << " workers go on (" << before
                  << " before), from commit " << state->commits();
  return absl::OkStatus();
}

}  // namespace

absl::Status RunElastic(ElasticState* state, const std::function<absl::Status()>& body) {
  MultiWorkerMirroredStrategy* strategy = state->strategy();
  FitShape shape;
  shape.model = state->ShapeHash();
  shape.elastic_settings = strategy->ElasticSettingsHash();
  ElasticRun run(strategy, state, shape, state->commits());
  if (strategy->joining()) {
    std::vector<double> carried(1, 0.0);
    int64_t slowest = 0;
    absl::Status joined = run.JoinRunningJob(&slowest, &carried);
    if (strategy->joining()) {  // It never got in.
      return joined.ok() ? absl::InternalError("joining the running job ended before it joined")
                         : joined;
    }
    if (joined.ok()) {
      state->set_commits(run.progress());
      RW_LOG(WARNING) << "generation " << strategy->generation() << ": " << strategy->arrived()
                      << " joined; " << strategy->num_replicas_in_sync()
                      << " workers go on, from commit " << state->commits();
    } else {
      RW_RETURN_IF_ERROR(ChangeRing(&run, state, joined, /*has_state=*/false));
    }
  } else if (strategy->num_replicas_in_sync() > 1) {
    // Every member, elastic or not: one that is not would skip Commit's all-reduce.
    std::vector<std::string> lines;
    for (const auto& [flag, value] : strategy->ElasticSettings()) {
      lines.push_back(absl::StrCat(flag, " ", value));
    }
    RW_RETURN_IF_ERROR(strategy->CheckSameOnEveryWorker("elastic settings", lines));
  }
  while (true) {
    const absl::Status done = body();
    if (done.ok()) return done;
    RW_RETURN_IF_ERROR(ChangeRing(&run, state, done));
  }
}

}  // namespace ringwork
