// One worker's membership in the training ring: its gRPC server on its own
// TF_CONFIG address, the rendezvous with every peer, a Link per peer (shared memory
// for peers on this host, gRPC otherwise) and the Communicator that runs
// collectives over them.
//
//   RW_ASSIGN_OR_RETURN(ClusterConfig config, ResolveCluster({}, EnvFromProcess()));
//   RuntimeOptions options;
//   RW_ASSIGN_OR_RETURN(std::unique_ptr<WorkerRuntime> runtime,
//                       WorkerRuntime::Start(config, options));  // once all peers joined
//   Communicator* comm = runtime->communicator();
//   std::vector<float> grads(1024);
//   RW_RETURN_IF_ERROR(comm->AllReduce(grads.data(), grads.size(), DataType::kFloat32,
//                                      ReduceOp::kMean));
//   RW_RETURN_IF_ERROR(runtime->Shutdown());
//
// For tests that run several workers in one process on port 0: Listen() each,
// learn bound_port(), SetAddress() the real ports into every runtime, then
// Connect() each on its own thread.
//
// Threads: the caller's (collectives, Start, Shutdown); one completion-queue thread
// (rw-grpc-cq); one heartbeat thread (rw-heartbeat, after Connect); gRPC's own
// server and resolver threads.
#ifndef RINGWORK_RUNTIME_WORKER_RUNTIME_H_
#define RINGWORK_RUNTIME_WORKER_RUNTIME_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "observability/timeline.h"
#include "runtime/auth/refusal_log.h"
#include "runtime/auth/rpc_auth.h"
#include "runtime/collectives/communicator.h"
#include "runtime/collectives/progress.h"
#include "runtime/config/cluster_config.h"
#include "runtime/heartbeat_monitor.h"
#include "runtime/runtime_options.h"
#include "runtime/transport/grpc/rendezvous.h"
#include "runtime/transport/transport.h"

namespace ringwork {

class WorkerServer;
class CompletionQueueLoop;
class GrpcLink;
class PeerLiveness;
class InboundJoins;
class ShmEndpoint;
namespace proto {
class JoinRequest;
class JoinResponse;
}  // namespace proto

class WorkerRuntime {
 public:
  static absl::StatusOr<std::unique_ptr<WorkerRuntime>> Start(const ClusterConfig& config,
                                                              const RuntimeOptions& options);
  // The two halves of Start.
  static absl::StatusOr<std::unique_ptr<WorkerRuntime>> Listen(const ClusterConfig& config,
                                                               const RuntimeOptions& options);
  absl::Status Connect();
  // Instead of Connect, for elastic training's membership round (runtime/regroup.h):
  // Joins every peer for `seconds` (or until all answered) and returns the ranks
  // that answered or called. Shut it down after.
  // `first_contact_wait_s` > 0: the window opens at the first peer that answers
  // or calls, awaited that long (a worker joining a running job).
  // `late_member_wait_s`: RendezvousOptions::late_member_wait_s.
  // A round's ranks are original ranks; a worker added to the job that this one
  // did not know yet (an extra past its roster) counts once it called, and its
  // address comes with `extra_workers`.
  struct Discovered {
    std::vector<int> present;             // Ranks, this one included, in order.
    std::vector<int> member_since;        // Of each of them (JoinRequest.member_since).
    std::vector<HostPort> extra_workers;  // Every extra known now (ClusterConfig::ExtraWorkers).
  };
  absl::StatusOr<Discovered> Discover(double seconds, double first_contact_wait_s = 0,
                                      double late_member_wait_s = 0);
  // Elastic training (RendezvousOptions::elastic): how many asks to join this
  // running ring refused with its generation (RendezvousOptions::asks_to_join;
  // each asking runtime counts once); it lets them in at its next step boundary
  // (a regroup).
  int joiners_waiting() const;
  // The extras (workers added on new hosts) this worker knows: its configuration's,
  // and those that Joins named since (a worker asking to join names itself and the
  // extras before it). ClusterConfig::WithExtraWorkers takes them.
  std::vector<HostPort> known_extra_workers() const;

  ~WorkerRuntime();
  WorkerRuntime(const WorkerRuntime&) = delete;
  WorkerRuntime& operator=(const WorkerRuntime&) = delete;

  // The port this worker's server listens on (its TF_CONFIG port, or the one
  // picked for port 0). 0 in local mode.
  int bound_port() const { return bound_port_; }
  // Before Connect: replaces a task's address (port-0 tests).
  void SetAddress(const TaskId& task, const HostPort& address);

  const ClusterConfig& config() const { return config_; }
  uint64_t incarnation() const { return incarnation_; }
  // Valid after Connect.
  Communicator* communicator() { return communicator_.get(); }
  // This worker's step and collectives (the strategy sets the step); heartbeats
  // report them to peers.
  Progress& progress() { return progress_; }
  // Collectives run under --first_step_timeout_s until this is called (the strategy
  // calls it after the first training step; programs without steps, right after
  // Start), then under --collective_timeout_s.
  void EndFirstStep();
  Transport* transport() { return transport_.get(); }
  // "worker:1 shm, worker:2 grpc": which link reaches each peer.
  std::string DescribeLinks() const;

  // Orderly shutdown: ends every stream cleanly, so peers see a clean close. Also
  // run by the destructor.
  absl::Status Shutdown();

 private:
  WorkerRuntime(const ClusterConfig& config, const RuntimeOptions& options);
  absl::Status StartServer();
  // Connect's work: the rendezvous, the links, the heartbeats.
  absl::Status JoinRing();
  // The rendezvous: Joins every peer over `channels` (made here) until all joined.
  absl::StatusOr<std::vector<JoinedPeer>> RunJoins(
      const RendezvousOptions& rendezvous_options,
      std::vector<std::shared_ptr<grpc::Channel>>* channels);
  // --timeline: installs this process's timeline (when no other is), and writes it
  // with the clock offset to the chief that the heartbeats estimated.
  absl::Status StartTimeline();  // Fails when --timeline cannot be written.
  void WriteTimeline();          // Logs, never fails the run: the training went as it went.
  // The loud warning of a cluster that is reachable from other hosts and has no token.
  void WarnIfUnprotected() const;
  grpc::Status HandleJoin(grpc::ServerContextBase* context, const proto::JoinRequest& request,
                          proto::JoinResponse* response);
  // A Join of TF_CONFIG's first generation to this running elastic ring from a
  // worker starting (again): counted, and refused with this ring's generation.
  bool IsJoinOfAStartingWorker(const proto::JoinRequest& request) const;
  // Elastic, while this worker starts (TF_CONFIG's ring, not formed yet): the
  // generation of a Join from a later generation of its cluster (a membership
  // round reaching it), else -1.
  int LaterGenerationCalling(const proto::JoinRequest& request) const;
  // Logs a refused call (rate-limited; not a first Join asking for the challenge)
  // and answers it; for a genuine call meant for another incarnation
  // (`stale_callee`), the answer carries this worker's incarnation as the challenge.
  grpc::Status Refuse(grpc::ServerContextBase* context, const std::string& what,
                      const absl::Status& why, bool stale_callee = false);

  ClusterConfig config_;
  RuntimeOptions options_;
  const uint64_t incarnation_;
  int bound_port_ = 0;
  std::atomic<bool> accepting_joins_{false};
  mutable std::mutex joiners_mu_;
  std::set<std::pair<int, uint64_t>> joiners_;  // (original rank, incarnation); joiners_mu_.
  std::string configured_fingerprint_;          // TF_CONFIG's ring at generation 0.
  // The extras known (ClusterConfig::ExtraWorkers, then learned from Joins).
  mutable std::mutex extras_mu_;
  std::vector<HostPort> known_extras_;  // Guarded by extras_mu_.
  // Learns the extras a Join names; true when the caller's rank is then known (a
  // rank of this worker's roster, or an extra it named). INVALID_ARGUMENT when its
  // roster contradicts this one's.
  absl::StatusOr<bool> LearnExtrasOf(const proto::JoinRequest& request);
  std::string fingerprint_;        // Fixed when Connect starts.
  std::unique_ptr<RpcAuth> auth_;  // Made when Connect starts; then read-only.
  RefusalLog refusals_;
  Progress progress_;  // Read by the Heartbeat handler on gRPC's threads.

  // Destroyed in reverse order: the communicator and transport before the links
  // they use, the links before the loop and server whose queue they use.
  std::unique_ptr<WorkerServer> server_;
  std::unique_ptr<CompletionQueueLoop> loop_;
  std::unique_ptr<InboundJoins> inbound_joins_;
  std::unique_ptr<ShmEndpoint> shm_;
  std::vector<std::shared_ptr<PeerLiveness>> liveness_;
  std::vector<std::unique_ptr<GrpcLink>> grpc_links_;  // By peer rank; null for self.
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<Communicator> communicator_;
  std::unique_ptr<HeartbeatMonitor> heartbeat_;  // Stopped first by Shutdown.
  bool shut_down_ = false;
  // Never deleted: spans on other threads (rw-allreduce) may still end into it
  // after Shutdown; its events are freed once written.
  Timeline* timeline_ = nullptr;
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_WORKER_RUNTIME_H_
