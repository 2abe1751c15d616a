#include "runtime/transport/grpc/rendezvous.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/deadline.h"
#include "base/logging.h"
#include "runtime/transport/grpc/grpc_util.h"

namespace ringwork {

namespace {
constexpr char kRunningGenerationPayload[] = "ringwork.dev/running-generation";
}  // namespace

absl::Status JobRunningError(int generation, absl::string_view message) {
  absl::Status status = absl::UnavailableError(message);
  status.SetPayload(kRunningGenerationPayload, absl::Cord(std::to_string(generation)));
  return status;
}

int RunningGenerationOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kRunningGenerationPayload);
  int generation = -1;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &generation)) return -1;
  return generation;
}

absl::Status InboundJoins::AdmitAndRecord(int rank, uint64_t incarnation, int member_since,
                                          const std::function<void()>& accept) {
  std::lock_guard<std::mutex> admission(admission_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (rank < 0) return absl::InvalidArgumentError(absl::StrCat("no rank ", rank));
    if (static_cast<size_t>(rank) >= joined_.size()) {
      // A worker added to the job that this one learned of from its Join.
      const size_t size = static_cast<size_t>(rank) + 1;
      incarnation_.resize(size, 0);
      joined_.resize(size, false);
      failed_.resize(size, false);
      member_since_.resize(size, 0);
    }
    // After startup: the same process again (its answer was lost, it retried)
    // changes nothing; a new one only replaces a member declared failed.
    const bool admitted =
        !sealed_ || (joined_[rank] && incarnation == incarnation_[rank]) || failed_[rank];
    if (!admitted) {
      return absl::AlreadyExistsError(
          absl::StrCat("rank ", rank, " is a member of this running job already (incarnation ",
                       incarnation_[rank],
                       "); a Join for it is accepted only after that worker was declared "
                       "failed"));
    }
  }
  accept();
  std::lock_guard<std::mutex> lock(mu_);
  incarnation_[rank] = incarnation;
  member_since_[rank] = member_since;
  joined_[rank] = true;
  return absl::OkStatus();
}

void InboundJoins::Seal() {
  std::lock_guard<std::mutex> admission(admission_mu_);
  std::lock_guard<std::mutex> lock(mu_);
  sealed_ = true;
}

bool InboundJoins::sealed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sealed_;
}

void InboundJoins::MarkFailed(int rank) {
  std::lock_guard<std::mutex> lock(mu_);
  if (rank >= 0 && rank < static_cast<int>(failed_.size())) failed_[rank] = true;
}

void InboundJoins::RecordRejection(const absl::Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (rejection_.ok()) rejection_ = status;
}

void InboundJoins::RecordRunningGeneration(int generation) {
  std::lock_guard<std::mutex> lock(mu_);
  running_generation_ = std::max(running_generation_, generation);
}

int InboundJoins::running_generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_generation_;
}

int InboundJoins::member_since(int rank) const {
  std::lock_guard<std::mutex> lock(mu_);
  return rank >= 0 && static_cast<size_t>(rank) < member_since_.size() ? member_since_[rank] : 0;
}

bool InboundJoins::joined(int rank) const {
  std::lock_guard<std::mutex> lock(mu_);
  return rank >= 0 && static_cast<size_t>(rank) < joined_.size() && joined_[rank];
}

uint64_t InboundJoins::incarnation(int rank) const {
  std::lock_guard<std::mutex> lock(mu_);
  return rank >= 0 && static_cast<size_t>(rank) < incarnation_.size() ? incarnation_[rank] : 0;
}

int InboundJoins::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(joined_.size());
}

absl::Status InboundJoins::rejection() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rejection_;
}

std::string SignedJoinFields(const proto::JoinRequest& r) {
  return absl::StrCat(r.protocol_version(), "\n", r.cluster_ring(), "\n", r.from_task(), "\n",
                      r.to_rank(), "\n", r.shm_segment(), "\n", r.hostname(), "\n", r.pid(), "\n",
                      r.member_since(), "\n", r.asks_to_join() ? 1 : 0);
}

absl::Status ValidateJoin(const ClusterConfig& config, const proto::JoinRequest& request,
                          const std::string& caller_address, int known_ranks) {
  const std::string self = config.DescribeRank(config.rank());
  const std::string caller =
      absl::StrCat(request.from_task(), " (connecting from ", caller_address, ")");
  if (request.protocol_version() != kProtocolVersion) {
    return absl::InvalidArgumentError(absl::StrCat(
        caller, " speaks Ringwork protocol version ", request.protocol_version(), " but ", self,
        " speaks version ", kProtocolVersion, "; run the same Ringwork build on every worker"));
  }
  if (request.cluster_fingerprint() != config.Fingerprint()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster mismatch: ", caller, " has cluster ", request.cluster_fingerprint(),
                     " [", request.cluster_ring(), "] but ", self, " has cluster ",
                     config.Fingerprint(), " [", config.NormalizedRing(),
                     "]; give every task the same TF_CONFIG \"cluster\" (only \"task\" differs)"));
  }
  if (request.to_rank() != config.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(caller, " expected rank ", request.to_rank(),
                                                   " at this address, but it is ", self));
  }
  if (request.from_rank() < 0 ||
      request.from_rank() >= std::max(config.world_size(), known_ranks) ||
      request.from_rank() == config.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(caller, " claims rank ", request.from_rank(),
                                                   ", which is not a peer of ", self));
  }
  return absl::OkStatus();
}

namespace {

constexpr char kChallengeKey[] = "rw-challenge";  // runtime/auth/rpc_auth.h
// How long a late member is still awaited after its last answer that said so.
constexpr double kLateMemberSilenceS = 3;

struct Attempt {
  int rank = 0;
  bool joined = false;
  bool in_flight = false;
  double backoff_s = 0;
  Deadline next_try = Deadline::AfterSeconds(0);
  absl::Status last_error = absl::UnavailableError("not contacted yet");
  JoinedPeer result;
  uint64_t challenge = 0;       // The peer's incarnation, as its refusal told it.
  uint64_t sent_challenge = 0;  // The one the call in flight is bound to.
  int challenges = 0;           // Challenges answered.
  // The last kMemberOfGenerationKey its refusals carried: a member of that
  // generation's ring (-1: none yet), and when it last said so. Kept through
  // answers without it for a while: a late member moving to the round shuts its
  // ring's server down and listens again (up to 2 s) in between.
  int member_of_generation = -1;
  Deadline member_of_generation_fresh = Deadline::AfterSeconds(0);
  std::unique_ptr<grpc::ClientContext> context;
  proto::JoinResponse response;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<proto::JoinResponse>> call;
};

bool IsRetryable(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::DEADLINE_EXCEEDED ||
         code == grpc::StatusCode::CANCELLED || code == grpc::StatusCode::UNKNOWN ||
         code == grpc::StatusCode::RESOURCE_EXHAUSTED;
}

std::string Reason(const Attempt& a, const InboundJoins& inbound) {
  if (!a.joined) return absl::StrCat("not reachable: ", a.last_error.message());
  if (!inbound.joined(a.rank)) return "reachable, but it has not joined this task yet";
  return "restarted during startup; joining again";
}

// "worker:0 (h:p) in generation 1's ring, ..."
std::string DescribeLate(const ClusterConfig& config, const std::vector<Attempt>& attempts,
                         const std::vector<int>& ranks) {
  std::vector<std::string> parts;
  for (int r : ranks) {
    parts.push_back(absl::StrCat(config.DescribeRank(r), " in generation ",
                                 attempts[r].member_of_generation, "'s ring"));
  }
  return absl::StrJoin(parts, ", ");
}

}  // namespace

absl::StatusOr<std::vector<JoinedPeer>> RunRendezvous(
    const ClusterConfig& config, const std::vector<proto::Worker::Stub*>& stubs,
    const std::function<proto::JoinRequest(int rank)>& make_request,
    const std::function<
        std::vector<std::pair<std::string, std::string>>(int rank, uint64_t incarnation)>& metadata,
    const InboundJoins& inbound, const RendezvousOptions& options) {
  const int world = config.world_size();
  const bool wait_for_contact = options.discovery && options.first_contact_wait_s > 0;
  Deadline deadline = Deadline::AfterSeconds(wait_for_contact ? options.first_contact_wait_s
                                                              : options.startup_timeout_s);
  bool contacted = !wait_for_contact;
  const auto start = std::chrono::steady_clock::now();
  Deadline next_log = Deadline::AfterSeconds(options.log_interval_s);
  std::vector<Attempt> attempts(world);
  for (int r = 0; r < world; ++r) {
    attempts[r].rank = r;
    attempts[r].backoff_s = options.initial_backoff_s;
  }
  grpc::CompletionQueue cq;
  absl::Status result;

  auto missing = [&] {
    std::vector<int> ranks;
    for (int r = 0; r < world; ++r) {
      if (r == config.rank()) continue;
      const Attempt& a = attempts[r];
      if (!a.joined || !inbound.joined(r) || inbound.incarnation(r) != a.result.incarnation) {
        ranks.push_back(r);
      }
    }
    return ranks;
  };
  auto describe_missing = [&](const std::vector<int>& ranks) {
    std::vector<std::string> parts;
    for (int r : ranks) {
      parts.push_back(absl::StrCat(config.DescribeRank(r), ": ", Reason(attempts[r], inbound)));
    }
    return absl::StrJoin(parts, "; ");
  };

  // A discovery round waits past its window for members of earlier rings that
  // are alive and not here yet (RendezvousOptions::late_member_wait_s).
  const Deadline late_members_deadline = Deadline::AfterSeconds(options.late_member_wait_s);
  bool waiting_for_late_members = false;
  auto late_members = [&] {
    std::vector<int> ranks;
    for (int r = 0; r < world; ++r) {
      const Attempt& a = attempts[r];
      if (r != config.rank() && !a.joined && !inbound.joined(r) && a.member_of_generation >= 0 &&
          a.member_of_generation < config.generation() && !a.member_of_generation_fresh.Expired()) {
        ranks.push_back(r);
      }
    }
    return ranks;
  };

  while (true) {
    if (!options.regroup) {
      result = inbound.rejection();
      if (!result.ok()) break;
      if (options.elastic && inbound.running_generation() >= 0) {
        result =
            JobRunningError(inbound.running_generation(),
                            "a worker of a later generation of this cluster called: the job runs");
        break;
      }
    }
    std::vector<int> waiting = missing();
    if (waiting.empty()) break;
    if (!contacted) {
      // Only a member (of an earlier generation) opens it: other workers joining
      // at once would open each other's, and miss members slower than the window.
      for (int r = 0; r < world && !contacted; ++r) {
        if (r == config.rank()) continue;
        contacted = (attempts[r].joined && attempts[r].result.member_since < config.generation()) ||
                    (inbound.joined(r) && inbound.member_since(r) < config.generation());
      }
      // The window opens now (Attempts in flight keep their own deadlines).
      if (contacted) deadline = Deadline::AfterSeconds(options.startup_timeout_s);
    }
    if (waiting_for_late_members && late_members().empty()) break;
    if (deadline.Expired() && options.discovery) {
      const std::vector<int> late = late_members();
      if (waiting_for_late_members || late.empty() || late_members_deadline.Expired()) break;
      // Who answered is the result, once the members still busy in their ring
      // came (or the wait for them ended).
      waiting_for_late_members = true;
      deadline = late_members_deadline;
      RW_LOG(INFO) << "membership round: waiting up to " << options.late_member_wait_s
                   << " s in all for workers alive and still busy in an earlier ring: "
                   << DescribeLate(config, attempts, late);
      continue;
    }
    if (deadline.Expired()) {
      // A timeout (exit 4), like every other deadline: the peer may only be slow.
      result = absl::DeadlineExceededError(absl::StrCat(
          "startup: gave up after ", options.startup_timeout_s, " s waiting for ", waiting.size(),
          " of ", world - 1, " peers of ", config.DescribeRank(config.rank()), ": ",
          describe_missing(waiting), ". Start the missing tasks, or set ", options.timeout_flag,
          " to wait longer"));
      break;
    }
    if (next_log.Expired()) {
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      RW_LOG(INFO) << "startup: waiting for " << waiting.size() << " of " << world - 1
                   << " peers after " << static_cast<int>(waited) << " s (deadline "
                   << options.startup_timeout_s << " s): " << describe_missing(waiting);
      next_log = Deadline::AfterSeconds(options.log_interval_s);
    }
    // A peer that joined us with a new incarnation restarted: join it again.
    for (int r : waiting) {
      Attempt& a = attempts[r];
      if (a.joined && inbound.joined(r) && inbound.incarnation(r) != a.result.incarnation) {
        a.joined = false;
      }
    }
    for (int r : waiting) {
      Attempt& a = attempts[r];
      if (a.joined || a.in_flight || !a.next_try.Expired()) continue;
      a.context = std::make_unique<grpc::ClientContext>();
      a.context->set_deadline(
          ToSystemTime(Deadline::AfterSeconds(options.attempt_timeout_s).Min(deadline)));
      a.context->set_wait_for_ready(false);
      for (const auto& [key, value] : metadata(r, a.challenge)) a.context->AddMetadata(key, value);
      a.sent_challenge = a.challenge;
      a.call = stubs[r]->AsyncJoin(a.context.get(), make_request(r), &cq);
      a.call->Finish(&a.response, &a.status, &a);
      a.in_flight = true;
    }
    void* tag = nullptr;
    bool ok = false;
    const auto wait_until = ToSystemTime(Deadline::AfterSeconds(0.1).Min(deadline));
    if (cq.AsyncNext(&tag, &ok, wait_until) != grpc::CompletionQueue::GOT_EVENT) continue;
    Attempt& a = *static_cast<Attempt*>(tag);
    a.in_flight = false;
    if (!a.status.ok() && options.discovery) {
      const auto& trailing = a.context->GetServerTrailingMetadata();
      auto it = trailing.find(kMemberOfGenerationKey);
      int generation = -1;
      if (it != trailing.end() &&
          absl::SimpleAtoi(absl::string_view(it->second.data(), it->second.size()), &generation)) {
        a.member_of_generation = generation;
        a.member_of_generation_fresh = Deadline::AfterSeconds(kLateMemberSilenceS);
      }
    }
    if (a.status.ok()) {
      a.joined = true;
      a.result.incarnation = a.response.incarnation();
      a.result.mapped_our_shm = a.response.shm_mapped();
      a.result.member_since = a.response.member_since();
      continue;
    }
    if (a.status.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
      // Refused for another incarnation: the first attempt, or the peer restarted.
      // Its challenge names the one to bind to: retry at once, once per challenge.
      const auto& trailing = a.context->GetServerTrailingMetadata();
      auto it = trailing.find(kChallengeKey);
      uint64_t challenge = 0;
      if (it != trailing.end() &&
          absl::SimpleAtoi(absl::string_view(it->second.data(), it->second.size()), &challenge) &&
          challenge != 0 && challenge != a.sent_challenge) {
        a.challenge = challenge;
        a.last_error = absl::UnavailableError("answered its challenge");
        // At once for the first few; then with the backoff, so that whatever
        // answers with ever new challenges cannot make this worker spin.
        if (++a.challenges > 3) {
          a.next_try = Deadline::AfterSeconds(a.backoff_s);
          a.backoff_s = std::min(options.max_backoff_s, a.backoff_s * 2);
        }
        continue;
      }
    }
    if (options.elastic && !options.regroup) {
      const auto& trailing = a.context->GetServerTrailingMetadata();
      auto it = trailing.find(kRunningGenerationKey);
      int generation = -1;
      if (it != trailing.end() &&
          absl::SimpleAtoi(absl::string_view(it->second.data(), it->second.size()), &generation) &&
          generation >= 0) {
        result = JobRunningError(generation,
                                 absl::StrCat(config.DescribeRank(a.rank),
                                              " runs the job already: ", a.status.error_message()));
        break;
      }
    }
    if (!IsRetryable(a.status.error_code()) && !options.regroup) {
      // The peer refused us: another cluster, protocol or identity. Not transient.
      result = absl::Status(
          static_cast<absl::StatusCode>(a.status.error_code()),
          absl::StrCat(config.DescribeRank(a.rank), " refused to join ",
                       config.DescribeRank(config.rank()), ": ", a.status.error_message()));
      break;
    }
    a.last_error = FromGrpcStatus(a.status);
    a.next_try = Deadline::AfterSeconds(a.backoff_s);
    a.backoff_s = std::min(options.max_backoff_s, a.backoff_s * 2);
  }

  // Cancel and collect every call still in flight before the queue goes away.
  int in_flight = 0;
  for (Attempt& a : attempts) {
    if (a.in_flight) {
      a.context->TryCancel();
      ++in_flight;
    }
  }
  const Deadline drain = Deadline::AfterSeconds(10);
  while (in_flight > 0 && !drain.Expired()) {
    void* tag;
    bool ok;
    if (cq.AsyncNext(&tag, &ok, ToSystemTime(drain)) == grpc::CompletionQueue::GOT_EVENT) {
      static_cast<Attempt*>(tag)->in_flight = false;
      --in_flight;
    }
  }
  cq.Shutdown();
  void* tag;
  bool ok;
  while (cq.Next(&tag, &ok)) {
  }
  if (!result.ok()) return result;
  std::vector<JoinedPeer> peers(world);
  for (int r = 0; r < world; ++r) {
    peers[r] = attempts[r].result;
    peers[r].present = r != config.rank() && (attempts[r].joined || inbound.joined(r));
    // A peer that only called this worker said it in its Join.
    if (!attempts[r].joined && inbound.joined(r)) peers[r].member_since = inbound.member_since(r);
  }
  return peers;
}

}  // namespace ringwork
