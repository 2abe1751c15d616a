#include "runtime/worker_runtime.h"

#include <malloc.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/crash_points.h"
#include "base/logging.h"
#include "base/status_macros.h"
#include "proto/worker.grpc.pb.h"
#include "runtime/auth/rpc_auth.h"
#include "runtime/collectives/algorithm_selection.h"
#include "runtime/transport/grpc/cq_loop.h"
#include "runtime/transport/grpc/grpc_link.h"
#include "runtime/transport/grpc/grpc_util.h"
#include "runtime/transport/grpc/rendezvous.h"
#include "runtime/transport/grpc/worker_server.h"
#include "runtime/transport/peer_liveness.h"
#include "runtime/transport/shm/shm_endpoint.h"

namespace ringwork {
namespace {

uint64_t NewIncarnation() {
  std::random_device device;
  std::mt19937_64 generator(
      (static_cast<uint64_t>(device()) << 32) ^ device() ^ static_cast<uint64_t>(::getpid()) ^
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  uint64_t value = 0;
  while (value == 0) value = generator();
  return value;
}

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(const RuntimeOptions& options) {
  return options.tls.channel != nullptr ? options.tls.channel : grpc::InsecureChannelCredentials();
}

std::shared_ptr<grpc::Channel> MakeChannel(
    const HostPort& address, size_t max_message,
    const std::shared_ptr<grpc::ChannelCredentials>& credentials, bool bdp_probe) {
  grpc::ChannelArguments args;
  for (const auto& [key, value] : DataStreamChannelSettings(bdp_probe)) args.SetInt(key, value);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  // gRPC takes this as the connect timeout too (TCP and TLS handshakes): not less.
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 2000);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Workers of one test process must not share connections.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  // Sends point at the caller's tensors without a copy and complete when gRPC says
  // the bytes were written; zero-copy TCP would read them after that (grpc_link.h).
  args.SetInt(GRPC_ARG_TCP_TX_ZEROCOPY_ENABLED, 0);
  args.SetMaxReceiveMessageSize(static_cast<int>(max_message));
  args.SetMaxSendMessageSize(static_cast<int>(max_message));
  return grpc::CreateCustomChannel(address.ToString(), credentials, args);
}

// Heartbeats get a connection of their own, so that they never queue behind a
// data stream's frames.
std::shared_ptr<grpc::Channel> MakeHeartbeatChannel(
    const HostPort& address, const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  // gRPC takes this as the connect timeout too (TCP and TLS handshakes): not less.
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 2000);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetString("rw-channel", "heartbeat");  // Not pooled with the data channel.
  return grpc::CreateCustomChannel(address.ToString(), credentials, args);
}

}  // namespace

WorkerRuntime::WorkerRuntime(const ClusterConfig& config, const RuntimeOptions& options)
    : config_(config),
      options_(options),
      incarnation_(NewIncarnation()),
      known_extras_(config.ExtraWorkers()) {}

WorkerRuntime::~WorkerRuntime() { (void)Shutdown(); }

absl::StatusOr<std::unique_ptr<WorkerRuntime>> WorkerRuntime::Start(const ClusterConfig& config,
                                                                    const RuntimeOptions& options) {
  RW_ASSIGN_OR_RETURN(std::unique_ptr<WorkerRuntime> runtime, Listen(config, options));
  RW_RETURN_IF_ERROR(runtime->Connect());
  return runtime;
}

absl::StatusOr<std::unique_ptr<WorkerRuntime>> WorkerRuntime::Listen(
    const ClusterConfig& config, const RuntimeOptions& options) {
  if (!config.in_ring()) {
    return absl::InvalidArgumentError(absl::StrCat(
        config.task().ToString(),
        " is an evaluator: it does not join the training ring (an app asks ResolveThisTask() "
        "first and runs a SidecarEvaluator there: examples/evaluator_app.cc)"));
  }
  // Apps that embed the strategy parse no flags: the environment reaches them here.
  RuntimeOptions finished = options;
  RW_RETURN_IF_ERROR(finished.ApplyEnvironmentAndFinish());
  std::unique_ptr<WorkerRuntime> runtime(new WorkerRuntime(config, finished));
  if (!finished.timeline_path.empty()) RW_RETURN_IF_ERROR(runtime->StartTimeline());
  TimelineSpan span("startup", "start server");
  if (finished.tune_malloc) {
    // gRPC allocates every received frame; glibc would return large freed blocks to
    // the kernel and fault them in again for the next frame (about 3x slower
    // all-reduces over gRPC here). Keep them in the process instead.
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
  }
  if (config.world_size() == 1) {
    runtime->transport_ = std::make_unique<Transport>(0, 1, finished.transport);
    runtime->transport_->set_self_name(config.DescribeRank(0));
    return runtime;
  }
  RW_RETURN_IF_ERROR(runtime->StartServer());
  return runtime;
}

absl::Status WorkerRuntime::StartServer() {
  const int world = config_.world_size();
  const int rank = config_.rank();
  if (options_.transport_kind == "auto") {
    absl::StatusOr<std::unique_ptr<ShmEndpoint>> shm = ShmEndpoint::Create(
        rank, world, static_cast<size_t>(options_.shm_ring_bytes), incarnation_);
    if (shm.ok()) {
      shm_ = std::move(*shm);
    } else {
      RW_LOG(WARNING) << "no shared memory for local peers, using gRPC for all: "
                      << shm.status().message();
    }
  }
  inbound_joins_ = std::make_unique<InboundJoins>(world);
  WorkerServer::Handlers handlers;
  // Every call is authenticated before anything else is looked at; a refused one
  // changes nothing here (runtime/auth/rpc_auth.h).
  handlers.join = [this](grpc::ServerContextBase* context, const grpc::ByteBuffer& raw,
                         grpc::ByteBuffer* out) {
    if (!accepting_joins_.load()) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "this worker is still starting");
    }
    bool stale_callee = false;
    absl::StatusOr<RpcIdentity> who =
        auth_->Verify(context->client_metadata(), RpcMethod::kJoin, &stale_callee);
    if (!who.ok()) return Refuse(context, "a Join", who.status(), stale_callee);
    proto::JoinRequest request;
    grpc::Status parsed = ParseSmallMessage(raw, kMaxControlMessageBytes, &request);
    if (!parsed.ok()) return Refuse(context, "a Join", FromGrpcStatus(parsed));
    absl::Status signed_body =
        auth_->VerifyBody(context->client_metadata(), SignedJoinFields(request));
    if (!signed_body.ok()) return Refuse(context, "a Join", signed_body);
    if (who->rank != request.from_rank() || who->incarnation != request.incarnation() ||
        who->fingerprint != request.cluster_fingerprint()) {
      return Refuse(
          context, "a Join",
          absl::UnauthenticatedError("the call's identity does not match its Join request"));
    }
    proto::JoinResponse response;
    grpc::Status status = HandleJoin(context, request, &response);
    return status.ok() ? SerializeMessage(response, out) : status;
  };
  handlers.heartbeat = [this](grpc::ServerContextBase* context, const grpc::ByteBuffer& raw,
                              grpc::ByteBuffer* out) {
    if (!accepting_joins_.load()) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "this worker is still starting");
    }
    bool stale_callee = false;
    absl::StatusOr<RpcIdentity> who =
        auth_->Verify(context->client_metadata(), RpcMethod::kHeartbeat, &stale_callee);
    absl::Status allowed = who.ok() ? auth_->SameCluster(*who) : who.status();
    if (!allowed.ok()) return Refuse(context, "a Heartbeat", allowed, stale_callee);
    proto::HeartbeatRequest request;  // Nothing in it is needed; parsed to check it.
    grpc::Status parsed = ParseSmallMessage(raw, kMaxControlMessageBytes, &request);
    if (!parsed.ok()) return Refuse(context, "a Heartbeat", FromGrpcStatus(parsed));
    proto::HeartbeatResponse response;
    response.set_rank(config_.rank());
    response.set_incarnation(incarnation_);
    response.set_step(progress_.step());
    response.set_collectives_started(progress_.started());
    response.set_steady_clock_us(Timeline::NowMicros());
    response.set_collectives_finished(progress_.finished());
    const absl::Status error = transport_->status();
    if (!error.ok()) {
      response.set_error_code(static_cast<int>(error.code()));
      response.set_error_message(std::string(error.message()));
    }
    return SerializeMessage(response, out);
  };
  handlers.transfer = [this](std::unique_ptr<InboundCall> call) {
    if (!accepting_joins_.load()) {
      call->context.TryCancel();
      return;
    }
    absl::StatusOr<RpcIdentity> who =
        auth_->Verify(call->context.client_metadata(), RpcMethod::kTransfer);
    absl::Status allowed = who.ok() ? auth_->SameCluster(*who) : who.status();
    if (allowed.ok() &&
        !(who->rank >= 0 && who->rank < config_.world_size() && who->rank != config_.rank() &&
          inbound_joins_->joined(static_cast<int>(who->rank)) &&
          inbound_joins_->incarnation(static_cast<int>(who->rank)) == who->incarnation)) {
      allowed = absl::PermissionDeniedError("it did not identify as a joined peer of this cluster");
    }
    if (!allowed.ok()) {
      refusals_.Refused(call->context.peer(), "a data stream", allowed);
      call->context.TryCancel();
      return;
    }
    // A second stream for the same peer (injected) is refused by the link. This
    // worker answers with its own identity, signed for the caller's process: on a
    // lower rank's call (the data call) before any frame; on either call before a
    // cause (an abort's status) is believed.
    grpc_links_[who->rank]->AttachInbound(
        std::move(call),
        auth_->CallMetadataFor(RpcMethod::kTransferReply, who->rank, who->incarnation));
  };
  const HostPort address = *config_.address();
  const size_t max_message = options_.grpc.max_payload_bytes + kFrameHeaderBytes + 4096;
  RW_ASSIGN_OR_RETURN(
      server_, WorkerServer::Start(address, config_.task().ToString(), std::move(handlers),
                                   max_message, options_.tls.server, options_.grpc_bdp_probe));
  bound_port_ = server_->port();
  config_.SetAddress(config_.task(), HostPort{address.host, bound_port_});

  transport_ = std::make_unique<Transport>(rank, world, options_.transport,
                                           shm_ != nullptr ? shm_->bell() : nullptr);
  transport_->set_self_name(config_.DescribeRank(rank));
  liveness_.resize(world);
  grpc_links_.resize(world);
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank) continue;
    liveness_[peer] = std::make_shared<PeerLiveness>();
    grpc_links_[peer] =
        std::make_unique<GrpcLink>(server_->cq(), liveness_[peer], options_.grpc, rank < peer);
    grpc_links_[peer]->set_peer_name(config_.DescribeRank(peer));
    transport_->SetLink(peer, grpc_links_[peer].get());
  }
  loop_ = std::make_unique<CompletionQueueLoop>(server_->cq());
  // After the collectives the loop thread posts the Reads the links owe; from
  // then on it reads each frame as it comes. So frames a peer sent ahead leave
  // gRPC's buffer (a reset stream would drop them) and its end of stream is seen.
  loop_->set_on_resume([this] {
    for (auto& link : grpc_links_) {
      if (link != nullptr) link->PostOwedRead();
    }
  });
  loop_->Start();
  server_->StartAccepting();
  RW_LOG(INFO) << "listening on " << config_.address()->ToString() << " as "
               << config_.task().ToString() << " (rank " << rank << " of " << world << ")";
  return absl::OkStatus();
}

void WorkerRuntime::SetAddress(const TaskId& task, const HostPort& address) {
  config_.SetAddress(task, address);
  if (transport_ != nullptr && config_.in_ring()) {
    transport_->set_self_name(config_.DescribeRank(config_.rank()));
  }
  for (int peer = 0; peer < static_cast<int>(grpc_links_.size()); ++peer) {
    if (grpc_links_[peer] != nullptr) grpc_links_[peer]->set_peer_name(config_.DescribeRank(peer));
  }
}

void WorkerRuntime::WarnIfUnprotected() const {
  if (auth_->enabled()) return;
  std::vector<std::string> exposed;
  for (const RingMember& member : config_.Ring()) {
    if (!member.address.is_loopback()) exposed.push_back(member.address.ToString());
  }
  if (exposed.empty()) return;
  RW_LOG(WARNING) << "************************************************************";
  RW_LOG(WARNING) << "NO CLUSTER TOKEN: anyone who can reach " << absl::StrJoin(exposed, ", ")
                  << " can join or disturb this job. Give every task the same secret with "
                     "--cluster_token_file or env RINGWORK_CLUSTER_TOKEN (see README, "
                     "\"Security\"), and use --tls_* on networks you do not trust.";
  RW_LOG(WARNING) << "************************************************************";
}

absl::Status WorkerRuntime::Connect() {
  absl::Status status = JoinRing();
  // Peers that opened streams to this worker learn why it gives up, and its
  // shutdown waits for nobody.
  if (!status.ok() && transport_ != nullptr) transport_->Abort(status);
  return status;
}

absl::StatusOr<std::vector<JoinedPeer>> WorkerRuntime::RunJoins(
    const RendezvousOptions& rendezvous_options,
    std::vector<std::shared_ptr<grpc::Channel>>* channels) {
  const int world = config_.world_size();
  const int rank = config_.rank();
  fingerprint_ = config_.Fingerprint();
  configured_fingerprint_ = config_.Configured().Fingerprint();
  auth_ = std::make_unique<RpcAuth>(options_.cluster_token, fingerprint_, rank, incarnation_);
  // A worker starting again calls this one by its rank in TF_CONFIG's ring.
  if (config_.generation() > 0) auth_->AlsoAnswerJoinsAs(config_.original_rank());
  WarnIfUnprotected();
  accepting_joins_.store(true);  // Publishes auth_ to the server's handlers.
  const size_t max_message = options_.grpc.max_payload_bytes + kFrameHeaderBytes + 4096;
  const std::vector<RingMember> ring = config_.Ring();
  channels->assign(world, nullptr);
  std::vector<std::unique_ptr<proto::Worker::Stub>> stubs(world);
  std::vector<proto::Worker::Stub*> stub_pointers(world, nullptr);
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank) continue;
    (*channels)[peer] = MakeChannel(ring[peer].address, max_message, ChannelCredentials(options_),
                                    options_.grpc_bdp_probe);
    stubs[peer] = proto::Worker::NewStub((*channels)[peer]);
    stub_pointers[peer] = stubs[peer].get();
  }
  char hostname[256] = {0};
  ::gethostname(hostname, sizeof(hostname) - 1);
  auto make_request = [&](int peer) {
    proto::JoinRequest request;
    request.set_protocol_version(kProtocolVersion);
    request.set_cluster_fingerprint(fingerprint_);
    // The extras this worker knows travel with it (the fingerprint omits them).
    request.set_cluster_ring(config_.NormalizedRing() + config_.RosterText());
    request.set_from_rank(rank);
    request.set_from_task(config_.task().ToString());
    request.set_incarnation(incarnation_);
    request.set_to_rank(peer);
    if (shm_ != nullptr) request.set_shm_segment(shm_->name());
    request.set_hostname(hostname);
    request.set_pid(::getpid());
    request.set_member_since(rendezvous_options.member_since);
    request.set_asks_to_join(rendezvous_options.asks_to_join);
    return request;
  };
  auto join_metadata = [&](int peer, uint64_t peer_incarnation) {
    return auth_->CallMetadataFor(RpcMethod::kJoin, peer, peer_incarnation,
                                  SignedJoinFields(make_request(peer)));
  };
  TimelineSpan rendezvous("startup", "rendezvous");
  absl::StatusOr<std::vector<JoinedPeer>> peers = RunRendezvous(
      config_, stub_pointers, make_request, join_metadata, *inbound_joins_, rendezvous_options);
  rendezvous.End();
  if (shm_ != nullptr) shm_->Unlink();  // Every peer that will map it has.
  return peers;
}

absl::Status WorkerRuntime::JoinRing() {
  const int world = config_.world_size();
  const int rank = config_.rank();
  CollectiveOptions first_step = options_.collectives;
  first_step.timeout_s = options_.first_step_timeout_s;
  first_step.timeout_flag = "--first_step_timeout_s (env RINGWORK_FIRST_STEP_TIMEOUT_S)";
  if (world == 1) {
    communicator_ = std::make_unique<Communicator>(transport_.get(), first_step, &progress_);
    return absl::OkStatus();
  }
  CrashPoint("startup");
  TimelineSpan span("startup", "join the ring");
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  absl::StatusOr<std::vector<JoinedPeer>> peers = RunJoins(options_.rendezvous, &channels);
  if (!peers.ok()) return peers.status();
  inbound_joins_->Seal();
  const std::vector<RingMember> ring = config_.Ring();

  std::vector<std::string> kinds;
  int shm_peers = 0;
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank) continue;
    // The gRPC stream is opened for every peer: for shared-memory peers it carries
    // no data, but its end tells us when the peer is gone.
    const uint64_t peer_incarnation = (*peers)[peer].incarnation;
    // The peer answers this worker's call by proving it is the peer that joined
    // (its reply metadata, signed for this process): before its frames on the
    // lower rank's call, and before a cause in either call's status is believed.
    ReplyCheck check_reply = [this, peer, peer_incarnation](const auto& metadata) {
      return auth_->VerifyPeer(metadata, RpcMethod::kTransferReply, peer, peer_incarnation);
    };
    grpc_links_[peer]->OpenOutbound(
        channels[peer], auth_->CallMetadataFor(RpcMethod::kTransfer, peer, peer_incarnation),
        std::move(check_reply));
    const bool shm = shm_ != nullptr && shm_->mapped(peer) && (*peers)[peer].mapped_our_shm;
    if (shm) {
      std::unique_ptr<Link> link =
          shm_->MakeLink(peer, liveness_[peer], options_.grpc.max_payload_bytes);
      link->set_peer_name(config_.DescribeRank(peer));
      transport_->SetLink(peer, std::move(link));
      ++shm_peers;
    }
    kinds.push_back(absl::StrCat(config_.DescribeRank(peer), " ", shm ? "shm" : "grpc"));
  }
  // Peers all over gRPC: a thread waiting in a collective runs gRPC's completions
  // itself (it borrows the queue from rw-grpc-cq), so no wake-up separates a frame's
  // arrival from its reduction, and it spins briefly before it blocks, as it does
  // for shared memory (docs/performance/communication.md: 4 B all-reduce over gRPC
  // 87 -> ~35 us).
  // With shared-memory peers too, the waiter sleeps on the doorbell they ring, and
  // rw-grpc-cq keeps the queue (a thread asleep on the doorbell cannot run gRPC, and
  // handing the queue over at every sleep costs two wake-ups).
  if (shm_peers == 0) transport_->set_completion_source(loop_.get());
  transport_->set_spin_us(options_.spin_us >= 0 ? options_.spin_us : 50);
  communicator_ = std::make_unique<Communicator>(transport_.get(), first_step, &progress_);
  std::vector<HeartbeatMonitor::Peer> heartbeat_peers;
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank) continue;
    const uint64_t peer_incarnation = (*peers)[peer].incarnation;
    heartbeat_peers.push_back(
        {peer, config_.DescribeRank(peer), peer_incarnation,
         MakeHeartbeatChannel(ring[peer].address, ChannelCredentials(options_)),
         auth_->CallMetadataFor(RpcMethod::kHeartbeat, peer, peer_incarnation)});
  }
  heartbeat_ = std::make_unique<HeartbeatMonitor>(
      options_.heartbeat, rank, incarnation_, config_.DescribeRank(rank),
      std::move(heartbeat_peers), &progress_, server_->cq(),
      [this](int failed_rank, const absl::Status& cause) {
        // A failed peer may be replaced later (elastic training); a live one never.
        if (failed_rank >= 0) inbound_joins_->MarkFailed(failed_rank);
        // A peer that told us why it left (its stream ended with its cause) and then
        // went silent: its cause is the root one.
        const absl::Status told =
            failed_rank >= 0 ? liveness_[failed_rank]->cause() : absl::OkStatus();
        transport_->Abort(
            told.ok() ? cause
                      : absl::Status(told.code(), absl::StrCat(told.message(), " (reported by ",
                                                               config_.DescribeRank(failed_rank),
                                                               ", which then exited)")));
      });
  heartbeat_->Start();
  RW_RETURN_IF_ERROR(communicator_->AgreeOnSegmentBytes());
  RW_RETURN_IF_ERROR(communicator_->LearnTopology());
  const HostTopology& topology = communicator_->topology();
  if (options_.collectives.allreduce_algorithm == AllReduceAlgorithm::kHierarchical) {
    if (!topology.uniform()) {
      RW_LOG(WARNING) << "--allreduce_algorithm=hierarchical needs the same number of workers "
                      << "on every host; this job has " << topology.ToString()
                      << ": all-reduces use the ring";
    } else if (!topology.layered()) {
      RW_LOG(WARNING) << "--allreduce_algorithm=hierarchical on " << topology.ToString()
                      << " degenerates to a flat ring (it pays with 2+ hosts of 2+ workers)";
    }
  }
  RW_LOG(INFO) << "joined the ring: rank " << rank << " of " << world
               << "; links: " << absl::StrJoin(kinds, ", ") << "; " << topology.ToString()
               << "; segment " << communicator_->segment_bytes() << " bytes; "
               << (options_.collectives.allreduce_algorithm == AllReduceAlgorithm::kAuto
                       ? absl::StrCat("recursive doubling below ",
                                      RecursiveDoublingBelow(world, options_.collectives,
                                                             communicator_->network_links()),
                                      " bytes")
                       : absl::StrCat(
                             "all-reduces by ",
                             AllReduceAlgorithmName(options_.collectives.allreduce_algorithm),
                             " (forced)"))
               << (options_.grpc_bdp_probe ? "; gRPC bandwidth-delay probe on" : "") << "; calls "
               << (auth_->enabled() ? "authenticated by the cluster token" : "NOT authenticated")
               << (options_.tls.enabled ? ", mutual TLS" : ", plaintext");
  return absl::OkStatus();
}

void WorkerRuntime::EndFirstStep() {
  if (communicator_ == nullptr) return;
  communicator_->SetTimeout(options_.collectives.timeout_s, options_.collectives.timeout_flag);
}

std::string WorkerRuntime::DescribeLinks() const {
  std::vector<std::string> parts;
  for (int peer = 0; peer < config_.world_size(); ++peer) {
    if (peer == config_.rank() || transport_ == nullptr || transport_->link(peer) == nullptr) {
      continue;
    }
    parts.push_back(absl::StrCat(config_.DescribeRank(peer), " ", transport_->link(peer)->kind()));
  }
  return absl::StrJoin(parts, ", ");
}

absl::Status WorkerRuntime::StartTimeline() {
  // Find an unwritable path now, not after hours of training.
  const std::string probe = options_.timeline_path + ".tmp";
  {
    std::ofstream out(probe, std::ios::trunc);
    if (!out) {
      return absl::InvalidArgumentError(absl::StrCat("--timeline=", options_.timeline_path,
                                                     ": cannot write ", probe, ": ",
                                                     std::strerror(errno)));
    }
  }
  std::remove(probe.c_str());
  auto* timeline = new Timeline(options_.timeline);
  if (!Timeline::Install(timeline)) {
    RW_LOG(WARNING) << "--timeline=" << options_.timeline_path
                    << ": another worker in this process records the timeline; "
                    << config_.task().ToString() << " writes none";
    delete timeline;
    return absl::OkStatus();
  }
  timeline_ = timeline;
  return absl::OkStatus();
}

namespace {

// Processes under one kernel read one CLOCK_MONOTONIC, in any network namespace.
std::string ClockDomain(const std::string& hostname) {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  if (in >> boot_id && !boot_id.empty()) return absl::StrCat("boot_id ", boot_id);
  return absl::StrCat("host ", hostname);
}

}  // namespace

void WorkerRuntime::WriteTimeline() {
  if (timeline_ == nullptr) return;
  Timeline::Uninstall(timeline_);
  Timeline::ProcessInfo info;
  info.rank = config_.rank();
  info.task = config_.task().ToString();
  char hostname[256] = {0};
  ::gethostname(hostname, sizeof(hostname) - 1);
  info.host = hostname;
  info.clock_domain = ClockDomain(info.host);
  if (config_.rank() == 0) {
    info.clock_offset_rtt_us = 0;  // The chief's clock is the reference.
  } else if (heartbeat_ != nullptr) {
    const ClockOffset offset = heartbeat_->ClockOffsetTo(0);
    if (offset.known()) {
      info.clock_offset_us = offset.offset_us();
      info.clock_offset_rtt_us = offset.rtt_us();
    }
  }
  const absl::Status written = timeline_->WriteJson(options_.timeline_path, info);
  if (written.ok()) {
    RW_LOG(INFO) << "timeline: " << timeline_->recorded() << " events (" << timeline_->dropped()
                 << " dropped, --timeline_max_events) written to " << options_.timeline_path;
  } else {
    // The training itself went as it went: a lost timeline does not change the exit code.
    RW_LOG(ERROR) << written.message();
  }
  timeline_->Clear();
  timeline_ = nullptr;
}

absl::Status WorkerRuntime::Shutdown() {
  if (shut_down_) return absl::OkStatus();
  shut_down_ = true;
  if (heartbeat_ != nullptr) heartbeat_->Stop();  // Peers leaving now is no failure.
  if (server_ == nullptr) {
    WriteTimeline();
    return absl::OkStatus();
  }
  const absl::Status failure = transport_ != nullptr ? transport_->status() : absl::OkStatus();
  if (!failure.ok()) {
    // This worker failed (or a peer did): there is nothing to flush, and a peer that
    // is stopped or cut off would never answer an orderly close. End every call at
    // once, telling each peer the cause, and wait only for local completions.
    const Deadline deadline = Deadline::AfterSeconds(std::min(1.0, options_.shutdown_timeout_s));
    for (auto& link : grpc_links_) {
      if (link != nullptr) link->OnAbort(failure);
    }
    for (auto& link : grpc_links_) {
      if (link != nullptr) link->WaitClosed(deadline, /*cancel_grace_s=*/0.5);
    }
    server_->Shutdown(Deadline::AfterSeconds(0));  // Cancels what is left.
    loop_->ShutdownAndJoin();
    communicator_.reset();
    transport_.reset();
    WriteTimeline();  // Last: peers learn of the failure first.
    return absl::OkStatus();
  }
  const Deadline deadline = Deadline::AfterSeconds(options_.shutdown_timeout_s);
  for (auto& link : grpc_links_) {
    if (link != nullptr) link->BeginClose(deadline);
  }
  for (auto& link : grpc_links_) {
    if (link != nullptr) link->WaitClosed(deadline);
  }
  server_->Shutdown(deadline);
  loop_->ShutdownAndJoin();
  // The transport still points at the links: close it while they exist.
  communicator_.reset();
  transport_.reset();
  WriteTimeline();
  return absl::OkStatus();
}

}  // namespace ringwork
