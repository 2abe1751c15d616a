// Failure detection between workers. From a thread of its own (rw-heartbeat), a
// worker calls Heartbeat on every peer every `interval_s`; a peer that has not
// answered for interval_s x misses is declared failed, and `on_failure` (which
// aborts every pending collective) gets a message naming the peer, its address, the
// step and how it was detected. Heartbeats are answered on the worker's completion
// queue (by its loop thread, or by a collective thread that borrowed the queue), so a
// worker busy computing a long step keeps answering; a killed, stopped (SIGSTOP) or
// cut-off one does not. The calls go out on that queue too (`cq`, driven by
// someone else): no other thread of the process waits in gRPC's poller.
//
// Replies also carry the peer's progress and its first error, so that
//  - a peer that failed is reported with its own cause (a mismatch stays exit 7);
//  - a collective that has waited `stall_warning_s` is reported once per period,
//    naming the peers that have not reached it yet (like Horovod's stall inspector).
//
//   HeartbeatMonitor monitor(options, rank, incarnation, self_name, peers, &progress, cq,
//                            [&](int failed_rank, absl::Status st) { transport.Abort(st); });
//
// `failed_rank` is the peer declared failed (silent, or restarted), or -1 when a
// peer that is alive reported a failure of its own (its first error).
//   monitor.Start();   ...   monitor.Stop();
#ifndef RINGWORK_RUNTIME_HEARTBEAT_MONITOR_H_
#define RINGWORK_RUNTIME_HEARTBEAT_MONITOR_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "runtime/clock_offset.h"
#include "runtime/collectives/progress.h"

namespace ringwork {

struct HeartbeatOptions {
  // Flags --heartbeat_interval_s, --heartbeat_misses, --stall_warning_s (env
  // RINGWORK_HEARTBEAT_INTERVAL_S, ...). A dead peer is detected within
  // interval_s x misses (+ up to one check period, 0.1 s).
  double interval_s = 1;
  int64_t misses = 5;
  double stall_warning_s = 60;
};

class HeartbeatMonitor {
 public:
  struct Peer {
    int rank = 0;
    std::string name;          // "worker:1 (10.0.0.2:2222)"
    uint64_t incarnation = 0;  // The process that joined; another one is a restart.
    std::shared_ptr<grpc::Channel> channel;
    // Attached to every Heartbeat call to this peer (identity, token HMAC).
    std::vector<std::pair<std::string, std::string>> metadata;
  };

  HeartbeatMonitor(HeartbeatOptions options, int rank, uint64_t incarnation, std::string self_name,
                   std::vector<Peer> peers, const Progress* progress /* not owned */,
                   grpc::CompletionQueue* cq /* not owned; driven by its loop */,
                   std::function<void(int failed_rank, const absl::Status&)> on_failure);
  ~HeartbeatMonitor();  // Stops.
  HeartbeatMonitor(const HeartbeatMonitor&) = delete;
  HeartbeatMonitor& operator=(const HeartbeatMonitor&) = delete;

  void Start();
  // Cancels outstanding calls and joins the thread. Idempotent.
  void Stop();

  // How many stall reports were logged (for tests).
  int stall_reports() const { return stall_reports_total_.load(); }

  // This worker's clock offset to peer `rank` (our steady clock + offset = the
  // peer's), from the heartbeat with the shortest round trip so far; unknown
  // before a reply or for a rank that is not a peer.
  ClockOffset ClockOffsetTo(int rank) const;

 private:
  struct PeerState;
  struct Call;
  void Loop();
  void Completed(Call* call);  // On the queue's thread.

  const HeartbeatOptions options_;
  const int rank_;
  const uint64_t incarnation_;
  const std::string self_name_;
  std::vector<Peer> peers_;
  const Progress* progress_;
  grpc::CompletionQueue* cq_;
  std::function<void(int failed_rank, const absl::Status&)> on_failure_;
  std::atomic<bool> stop_{false};
  std::atomic<int> stall_reports_total_{0};
  mutable std::mutex offsets_mu_;
  std::vector<ClockOffset> offsets_;  // Guarded by offsets_mu_; indexed like peers_.
  std::mutex done_mu_;
  std::condition_variable done_cv_;
  std::deque<Call*> done_;  // Completed calls for the thread. Guarded by done_mu_.
  std::thread thread_;
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_HEARTBEAT_MONITOR_H_
