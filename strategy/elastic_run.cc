#include "strategy/elastic_run.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/crash_points.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "observability/timeline.h"

namespace ringwork {

bool ElasticRun::CanSurvive(const absl::Status& failure) const {
  return strategy_->elastic() && !strategy_->joining() && IsPeerFailure(failure) &&
         strategy_->ring_failed();
}

absl::Status ElasticRun::SurvivePeerFailure(const absl::Status& failure, int64_t* slowest,
                                            std::vector<double>* carried) {
  absl::Status cause = failure;
  for (int round = 1;; ++round) {
    TimelineSpan span("elastic", "survive a peer failure");
    RW_LOG(WARNING) << "elastic training: the ring failed: " << cause.message()
                    << "; regrouping with the workers still running";
    // The reducer's thread leaves the failed collective (the transport is
    // aborted) before the runtime it uses goes away.
    strategy_->Abort(cause);
    replica_->LeaveRing();
    RW_RETURN_IF_ERROR(strategy_->Regroup(cause));
    absl::Status agreed = AgreeAfterRegroup(slowest, carried);
    // Another worker failed in the new ring before the state went round: again.
    if (agreed.ok() || !IsPeerFailure(agreed) || !strategy_->ring_failed() || round == 3) {
      return agreed;
    }
    cause = agreed;
  }
}

absl::Status ElasticRun::LetJoinersIn(int64_t* slowest, std::vector<double>* carried) {
  RW_LOG(INFO) << "elastic training: letting the workers that asked to join in, after " << progress_
               << " operations of fit";
  CrashPoint("let_in");   // Tests: members die (or are slow) as they let joiners in.
  replica_->LeaveRing();  // Idle between steps; made anew over the next ring.
  RW_RETURN_IF_ERROR(strategy_->Grow());
  CrashPoint("grow");  // Tests: a member dies before the joiners have the state.
  return AgreeAfterRegroup(slowest, carried);
}

absl::Status ElasticRun::JoinRunningJob(int64_t* slowest, std::vector<double>* carried) {
  RW_LOG(INFO) << "elastic training: waiting for the running job's next step boundary to join it";
  replica_->LeaveRing();
  RW_RETURN_IF_ERROR(strategy_->JoinRunningJob());
  progress_ = -1;  // Behind every member: it takes their state.
  return AgreeAfterRegroup(slowest, carried);
}

absl::Status ElasticRun::AgreeAfterRegroup(int64_t* slowest, std::vector<double>* carried) {
  replica_->EnterRing();
  // Every worker runs the operations in the same order, and one that completed
  // an operation saw every replica's part of it (a step: all gradients); replicas
  // are identical after every step. So the ring goes on at the furthest progress
  // any member made, with that worker's state (the lowest rank among those, so
  // that every worker picks the same one). A joining worker made none.
  Communicator* comm = strategy_->communicator();
  const int64_t world = comm->world_size();
  // A worker with no progress (one that joins) does not count as the slowest.
  int64_t key[2] = {progress_ * world + (world - 1 - comm->rank()),
                    progress_ < 0 ? std::numeric_limits<int64_t>::min() : -progress_};
  RW_RETURN_IF_ERROR(comm->AllReduce(key, 2, DataType::kInt64, ReduceOp::kMax));
  if (key[0] < 0) {
    // Only workers that joined, none with a state to take (the members are gone).
    return absl::UnavailableError(
        "no worker of this ring has a training state to go on from: every one of them came to "
        "join a running job whose members are gone");
  }
  const int root = static_cast<int>(world - 1 - key[0] % world);
  // What every worker must run alike: the root's (a worker that joined built its
  // model and data alone). Compared: the first 10; taken: the rest.
  constexpr int kCompared = 10, kWords = 17;
  FitShape& s = shape_;
  const int64_t mine[kCompared] = {
      s.steps,        s.epochs,          s.steps_per_pass,      s.examples_per_pass,
      s.data_seed,    s.model,           s.replica_check_steps, s.per_replica_batch ? 1 : 0,
      s.global_batch, s.elastic_settings};
  int64_t words[kWords] = {0,
                           0,
                           0,
                           0,
                           0,
                           0,
                           0,
                           0,
                           0,
                           0,
                           s.decide_per_batch ? 1 : 0,
                           s.start_epoch,
                           s.start_step_in_epoch,
                           s.data_pass,
                           s.data_offset,
                           s.epoch_first_step,
                           s.epoch_steps};
  std::copy(mine, mine + kCompared, words);
  RW_RETURN_IF_ERROR(comm->Broadcast(words, kWords, DataType::kInt64, root));
  // Every worker learns who differs (a worker that joined with other flags or
  // data): those leave, alone; the others regroup without them.
  const bool differs = !std::equal(mine, mine + kCompared, words);
  std::vector<int64_t> differing(static_cast<size_t>(world), 0);
  differing[static_cast<size_t>(comm->rank())] = differs ? 1 : 0;
  RW_RETURN_IF_ERROR(
      comm->AllReduce(differing.data(), differing.size(), DataType::kInt64, ReduceOp::kSum));
  const ClusterConfig& ring = strategy_->cluster();
  if (!differs && std::count(differing.begin(), differing.end(), 0) != world) {
    std::vector<std::string> leaving;
    for (int r = 0; r < world; ++r) {
      if (differing[static_cast<size_t>(r)] != 0) leaving.push_back(ring.DescribeRank(r));
    }
    // A peer failure (exit 3 for a minority): the others survive it as any.
    const absl::Status left = absl::UnavailableError(
        absl::StrCat(absl::StrJoin(leaving, ", "), " fit", leaving.size() > 1 ? "" : "s",
                     " differently from the ring (other flags or data) and left it"));
    strategy_->Abort(left);
    return left;
  }
  if (differs) {
    // The others learn a peer failure, which they survive; this worker alone
    // ends with the mismatch (exit 7).
    strategy_->Abort(absl::UnavailableError(absl::StrCat(
        ring.DescribeRank(comm->rank()), " fits differently from the ring and left it")));
    return absl::FailedPreconditionError(absl::StrCat(
        "this worker fits differently from the ring it ", progress_ < 0 ? "joins" : "is in",
        " (steps per epoch, epochs, steps per pass, examples per pass, data seed, model hash, "
        "replica_check_steps, per-replica batch, global batch, elastic settings' hash): ",
        absl::StrJoin(mine, ", "), " here, ", absl::StrJoin(words, words + kCompared, ", "),
        " there; every worker must run the same program with the same flags"));
  }
  RW_RETURN_IF_ERROR(replica_->AdoptStateOf(root));
  RW_RETURN_IF_ERROR(comm->Broadcast(carried->data(), carried->size(), DataType::kFloat64, root));
  // The progress changes only now that the state is taken: a failure before
  // leaves this worker where it was.
  s.decide_per_batch = words[10] != 0;
  s.start_epoch = words[11];
  s.start_step_in_epoch = words[12];
  s.data_pass = words[13];
  s.data_offset = words[14];
  s.epoch_first_step = words[15];
  s.epoch_steps = words[16];
  progress_ = key[0] / world;
  *slowest = -key[1];
  return absl::OkStatus();
}

}  // namespace ringwork
