// WorkerRuntime's answers to Joins: validating and admitting a peer's Join
// (startup, membership rounds), and in elastic training answering a worker that
// starts while the job runs (runtime/regroup.h, JoinRunningJob).
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "proto/worker.grpc.pb.h"
#include "runtime/auth/rpc_auth.h"
#include "runtime/transport/grpc/grpc_util.h"
#include "runtime/transport/grpc/rendezvous.h"
#include "runtime/transport/shm/shm_endpoint.h"
#include "runtime/worker_runtime.h"

namespace ringwork {

grpc::Status WorkerRuntime::Refuse(grpc::ServerContextBase* context, const std::string& what,
                                   const absl::Status& why, bool stale_callee) {
  // A genuine call meant for another incarnation learns this one's (a first Join
  // asks for it that way: expected, not logged). Only a caller that could sign the
  // call gets it; a replay learns nothing it could use without the token.
  const bool first_join =
      stale_callee && what == "a Join" && RpcAuth::AsksForChallenge(context->client_metadata());
  if (!first_join) refusals_.Refused(context->peer(), what, why);
  if (stale_callee) context->AddTrailingMetadata(kChallengeMetadataKey, auth_->challenge());
  return ToGrpcStatus(why);
}

grpc::Status WorkerRuntime::HandleJoin(grpc::ServerContextBase* context,
                                       const proto::JoinRequest& request,
                                       proto::JoinResponse* response) {
  if (options_.rendezvous.elastic && !config_.alone() &&
      (config_.discovery() || inbound_joins_->sealed())) {
    // A member of a formed ring (or of a membership round): a round of a later
    // generation that this worker has not reached yet waits for it.
    context->AddTrailingMetadata(kMemberOfGenerationKey, std::to_string(config_.generation()));
  }
  // A worker added on a new host (an extra) that this worker did not know names
  // itself and the extras before it: learned here, from a signed Join.
  absl::StatusOr<bool> known = LearnExtrasOf(request);
  if (!known.ok()) return Refuse(context, "a Join", known.status());
  // (A rank no roster names is refused below, as any stranger's.)
  const bool beyond_ring = *known && request.from_rank() >= config_.world_size();
  // A worker joining a running job is no proof that it runs (its members may be
  // gone): its membership round tells a starting worker nothing.
  const bool joiners_round =
      config_.discovery() && options_.rendezvous.member_since >= config_.generation();
  if (IsJoinOfAStartingWorker(request) && joiners_round) {
    return ToGrpcStatus(absl::UnavailableError(
        absl::StrCat(config_.DescribeRank(config_.rank()), " is joining a running job itself; ",
                     config_.DescribeOriginalRank(request.from_rank()),
                     " can join that job only through a "
                     "member")));
  }
  if (IsJoinOfAStartingWorker(request)) {
    const std::string who = request.from_rank() < config_.roster_size()
                                ? config_.DescribeOriginalRank(request.from_rank())
                                : absl::StrCat(request.from_task(), " (added on a new host)");
    // A membership round of generation g is still deciding g: the joiner waits
    // in that round, or the next one. (A worker alone accepts no Joins at all:
    // a ring of one never listens for them.)
    const int running = config_.discovery() ? config_.generation() - 1 : config_.generation();
    if (request.asks_to_join() && !config_.discovery()) {
      std::lock_guard<std::mutex> lock(joiners_mu_);
      if (joiners_.insert({request.from_rank(), request.incarnation()}).second) {
        RW_LOG(INFO) << who
                     << " starts again and asks to join; the ring lets it in at its next step";
      }
    }
    context->AddTrailingMetadata(kRunningGenerationKey, std::to_string(running));
    return ToGrpcStatus(absl::UnavailableError(absl::StrCat(
        config_.DescribeRank(config_.rank()), " trains at generation ", config_.generation(),
        " (elastic training); it lets ", who, " in at its next step")));
  }
  if (const int later = LaterGenerationCalling(request);
      later > 0 && request.member_since() >= later) {
    // A joiner's membership round (it is a member only from that generation on):
    // no proof that the job runs, and no mismatch either.
    return ToGrpcStatus(
        absl::UnavailableError(absl::StrCat(config_.DescribeRank(config_.rank()), " is starting; ",
                                            config_.DescribeOriginalRank(request.from_rank()),
                                            " joins a job, which only a member can show to run")));
  } else if (later > 0) {
    // A member's (or a joiner's) membership round reached this worker, which is
    // starting: the job runs. Its rendezvous ends (JobRunningError); the caller
    // asks again.
    inbound_joins_->RecordRunningGeneration(later - 1);
    return ToGrpcStatus(absl::UnavailableError(absl::StrCat(
        config_.DescribeRank(config_.rank()), " is starting; it will join the running job")));
  }
  if (beyond_ring && config_.generation() == 0 && !config_.discovery()) {
    // An extra calls while the job is still starting: it waits (it joins a job
    // that runs, never a starting one).
    return ToGrpcStatus(absl::UnavailableError(
        absl::StrCat(config_.DescribeRank(config_.rank()), " is still starting; ",
                     request.from_task(), " (added to the job) joins once it runs")));
  }
  if (request.asks_to_join()) {  // Never admitted: this worker runs no job to join.
    return ToGrpcStatus(absl::UnavailableError(
        absl::StrCat(config_.DescribeRank(config_.rank()), " runs no job that ",
                     config_.DescribeOriginalRank(request.from_rank()), " could join (yet)")));
  }
  // A membership round admits extras it did not know (their ranks are original
  // ranks past its roster); nothing else is admitted from beyond the ring.
  absl::Status valid =
      ValidateJoin(config_, request, context->peer(),
                   config_.discovery() && beyond_ring ? request.from_rank() + 1 : 0);
  if (!valid.ok()) {
    if (request.cluster_fingerprint() != fingerprint_) inbound_joins_->RecordRejection(valid);
    return Refuse(context, "a Join", valid);
  }
  // After startup a live peer's Join is a replay or a confused process: it must not
  // change the membership nor remap memory that a link reads. Admission, mapping
  // and recording happen as one step that the end of the rendezvous (Seal) waits for.
  bool mapped = false;
  absl::Status admitted = inbound_joins_->AdmitAndRecord(
      request.from_rank(), request.incarnation(), request.member_since(), [&] {
        // Never remaps under a live link (ShmEndpoint refuses): a retry maps nothing new.
        if (shm_ == nullptr || request.shm_segment().empty() || beyond_ring) return;
        absl::Status status = shm_->MapPeer(request.from_rank(), request.shm_segment());
        mapped = status.ok();
        if (!mapped)
          RW_VLOG(1) << "no shared memory with " << request.from_task() << ": " << status;
      });
  if (!admitted.ok()) return Refuse(context, "a Join", admitted);
  response->set_protocol_version(kProtocolVersion);
  response->set_cluster_fingerprint(fingerprint_);
  response->set_rank(config_.rank());
  response->set_task(config_.task().ToString());
  response->set_incarnation(incarnation_);
  response->set_shm_mapped(mapped);
  response->set_member_since(options_.rendezvous.member_since);
  return grpc::Status::OK;
}

int WorkerRuntime::LaterGenerationCalling(const proto::JoinRequest& request) const {
  if (!options_.rendezvous.elastic || config_.generation() != 0 || config_.alone() ||
      inbound_joins_->sealed()) {
    return -1;
  }
  // The caller signed its ring (SignedJoinFields): TF_CONFIG's, at a generation.
  const std::string prefix = absl::StrCat(config_.NormalizedRing(), ";generation=");
  if (!absl::StartsWith(request.cluster_ring(), prefix)) return -1;
  const absl::string_view rest = absl::string_view(request.cluster_ring()).substr(prefix.size());
  int generation = -1;
  if (!absl::SimpleAtoi(rest.substr(0, rest.find(';')), &generation)) return -1;
  return generation;
}

int WorkerRuntime::joiners_waiting() const {
  std::lock_guard<std::mutex> lock(joiners_mu_);
  return static_cast<int>(joiners_.size());
}

std::vector<HostPort> WorkerRuntime::known_extra_workers() const {
  std::lock_guard<std::mutex> lock(extras_mu_);
  return known_extras_;
}

absl::StatusOr<bool> WorkerRuntime::LearnExtrasOf(const proto::JoinRequest& request) {
  const int voting = config_.configured_world_size();
  std::lock_guard<std::mutex> lock(extras_mu_);
  const int known_ranks = voting + static_cast<int>(known_extras_.size());
  // (Every rank of this worker's ring is below it: its members are of its roster.)
  if (request.from_rank() < known_ranks) return true;
  // Only a Join of this job (the voting ring's identity, any generation) names extras.
  const std::string identity = config_.Configured().NormalizedRing();
  const absl::string_view ring = request.cluster_ring();
  if (!absl::StartsWith(ring, identity) ||
      (ring.size() > identity.size() && ring[identity.size()] != ';'))
    return false;
  RW_ASSIGN_OR_RETURN(std::vector<HostPort> named,
                      ClusterConfig::ParseRosterText(request.cluster_ring()));
  for (size_t i = 0; i < known_extras_.size() && i < named.size(); ++i) {
    if (known_extras_[i] != named[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat(request.from_task(), " names ", named[i].ToString(), " as worker:",
                       voting - static_cast<int>(config_.spec().chief.size()) + static_cast<int>(i),
                       ", which is ", known_extras_[i].ToString(),
                       " here: the workers added to the job differ (another job?)"));
    }
  }
  if (named.size() > known_extras_.size()) {
    for (size_t i = known_extras_.size(); i < named.size(); ++i) {
      RW_LOG(INFO) << "worker:"
                   << voting - static_cast<int>(config_.spec().chief.size()) + static_cast<int>(i)
                   << " (" << named[i].ToString() << ") was added to the job on a new host";
      known_extras_.push_back(named[i]);
    }
  }
  return request.from_rank() < voting + static_cast<int>(known_extras_.size());
}

bool WorkerRuntime::IsJoinOfAStartingWorker(const proto::JoinRequest& request) const {
  if (!options_.rendezvous.elastic || request.cluster_fingerprint() != configured_fingerprint_ ||
      request.from_rank() < 0 || request.from_rank() == config_.original_rank()) {
    return false;
  }
  // (Its rank is known: HandleJoin learned the extras its Join names.)
  // Later generations (their rounds, a worker alone too) never take such a Join.
  // At generation 0 the ring is TF_CONFIG's: once it formed, only a new process
  // of a rank counts (the joined one retrying is no joiner).
  return config_.generation() > 0 ||
         (inbound_joins_->sealed() &&
          inbound_joins_->incarnation(request.from_rank()) != request.incarnation());
}

}  // namespace ringwork
