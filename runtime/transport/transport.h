// A rank's endpoint for collectives: one Link per peer, a doorbell to sleep on, and
// the first error (sticky). Collective algorithms talk only to this class.
//
//   Transport transport(rank, world_size, Transport::Options());
//   transport.SetLink(peer, std::move(link));          // for every peer
//   Request send, recv;
//   send.PrepareSend(right, key, info, data, bytes);
//   recv.PrepareRecv(left, key, info, bytes, sink);
//   transport.PostRecv(&recv);
//   transport.PostSend(&send);
//   RW_RETURN_IF_ERROR(transport.Wait(&recv, deadline));
//
// Threads: PostSend, PostRecv and Wait are called by one thread at a time (the
// thread running collectives); Wait drives the links itself, so data moves and
// reductions run on that thread. Abort and status may be called from any thread.
// After the first error every pending and later request fails with that error.
#ifndef RINGWORK_RUNTIME_TRANSPORT_TRANSPORT_H_
#define RINGWORK_RUNTIME_TRANSPORT_TRANSPORT_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "base/deadline.h"
#include "runtime/transport/completion_source.h"
#include "runtime/transport/doorbell.h"
#include "runtime/transport/link.h"
#include "runtime/transport/request.h"

namespace ringwork {

class Transport {
 public:
  struct Options {
    // How long Wait() keeps polling before it sleeps on the doorbell. Spinning
    // saves the ~30 us it takes to wake a sleeping thread, at the price of a busy
    // core; every 16th idle poll yields (sched_yield: other runnable threads on
    // the core go first), so workers that oversubscribe a host's cores do not spin
    // against each other.
    // 0 never spins. Env: RINGWORK_SPIN_US.
    double spin_us = 50;
    // How often a sleeping Wait() wakes up anyway to re-check (the doorbell makes
    // this a safety net, not the wake-up path).
    double max_sleep_ms = 20;
    // How long FailPending may wait for link threads to let go of requests.
    double abort_drain_s = 5;
  };

  // `bell_word` is where peers ring this rank's doorbell; null makes a private one.
  Transport(int rank, int world_size, Options options,
            DoorbellWord* bell_word = nullptr /* not owned */);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  // "worker:0 (127.0.0.1:2222)"; defaults to "rank N".
  void set_self_name(std::string name) { self_name_ = std::move(name); }
  const std::string& self_name() const { return self_name_; }

  // Installs the link to `peer` (before the first collective), replacing any
  // earlier one. The second form borrows a link that the caller keeps alive
  // longer than this transport.
  void SetLink(int peer, std::unique_ptr<Link> link);
  void SetLink(int peer, Link* link);
  Link* link(int peer) const { return links_[peer]; }
  std::string PeerName(int peer) const;
  Doorbell* bell() { return &bell_; }
  // Changes Options::spin_us (before the first collective).
  void set_spin_us(double spin_us) { options_.spin_us = spin_us; }
  // Where the links get their completions (gRPC's queue; not owned, outlives the
  // transport's waits): Wait borrows it, runs them itself, and sleeps in it instead
  // of on the doorbell. Only for transports whose links all move by the source (no
  // shared-memory peer, which would ring the doorbell). Before the first collective.
  void set_completion_source(CompletionSource* source) { source_ = source; }

  // Where Wait spent its time, while a log is set (by the communicator, when a
  // timeline records; caller's thread only): in total, and the longest single wait
  // with its peer. Times are microseconds of the steady clock (the timeline's).
  struct WaitLog {
    int64_t waited_us = 0;
    int64_t longest_us = -1;
    int64_t longest_start_us = 0;
    int longest_peer = -1;
  };
  void set_wait_log(WaitLog* log) { wait_log_ = log; }

  void PostSend(Request* request);
  void PostRecv(Request* request);
  // Waits until `request` is done or `deadline` passes. On a deadline, or when the
  // request failed, returns that error (naming the peer and frame) without
  // aborting: the caller adds its context and aborts. After an abort returns the
  // first error.
  absl::Status Wait(Request* request, Deadline deadline);

  // Records the first error, fails everything pending, and makes every later
  // request fail at once with it. Thread-safe; later causes are ignored.
  void Abort(const absl::Status& cause);
  // OK, or the first error.
  absl::Status status() const;
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }

  // One line per link with its pending work, for stall reports.
  std::string DebugString() const;

 private:
  bool PollLinks();
  void FailAllPending();

  const int rank_;
  const int world_size_;
  Options options_;
  std::unique_ptr<DoorbellWord> own_bell_word_;
  Doorbell bell_;
  std::string self_name_;
  std::vector<Link*> links_;  // Indexed by peer rank; null for self.
  std::vector<std::unique_ptr<Link>> owned_links_;

  mutable std::mutex mu_;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> aborted_{false};
  bool pending_failed_ = false;         // Caller thread only.
  WaitLog* wait_log_ = nullptr;         // Caller thread only. Not owned.
  CompletionSource* source_ = nullptr;  // Not owned.
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_TRANSPORT_TRANSPORT_H_
