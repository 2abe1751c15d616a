// A Link moves frames between this rank and one peer. A Transport owns one Link per
// peer; each kind of link (in-memory for tests, shared memory for peers on this
// host, gRPC otherwise) implements this interface, so the collective algorithms run
// unchanged over any of them.
//
// Threads: PostSend, PostRecv, Poll and FailPending are called only from the thread
// that runs collectives (the Transport's caller, one at a time). OnAbort may be
// called from any thread. A link with threads of its own (gRPC) hands results over
// under its own lock and rings the doorbell.
//
// Order: frames between a pair of ranks arrive in the order they were sent, and
// receives are matched in the order they were posted; a frame that does not match
// the oldest pending receive is an error (the workers are out of step).
//
// Progress: a send may not complete until its peer has posted the matching
// receive, once the sender is further ahead than the link buffers (gRPC: 16 MiB
// after a small frame, the stream's window). So an algorithm may wait for a send
// only where the peer posts that frame's receive without waiting for anything
// this rank does after the wait.
#ifndef RINGWORK_RUNTIME_TRANSPORT_LINK_H_
#define RINGWORK_RUNTIME_TRANSPORT_LINK_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "base/deadline.h"
#include "runtime/transport/doorbell.h"
#include "runtime/transport/request.h"

namespace ringwork {

// What a link needs from the Transport that owns it.
struct LinkEnv {
  int self_rank = 0;
  std::string self_name;     // "worker:0 (127.0.0.1:2222)"
  Doorbell* bell = nullptr;  // The owning transport's doorbell. Not owned.
  // Records a fatal error (sticky; the first one wins) and wakes the waiter.
  std::function<void(const absl::Status&)> fail;
};

class Link {
 public:
  virtual ~Link() = default;

  // Called once by the Transport before any other method.
  virtual void Attach(const LinkEnv& env) { env_ = env; }

  // Queue a request; never blocks. The payload (send) or sink (recv) must stay
  // valid until the request is done.
  virtual void PostSend(Request* request) = 0;
  virtual void PostRecv(Request* request) = 0;
  // Moves what can move now without blocking, and runs the sinks of received data.
  // Returns true if anything happened.
  virtual bool Poll() = 0;
  // Completes every pending request with `status` and forgets them. Returns only
  // when no link thread can touch them or their memory any more (bounded by
  // `deadline`).
  virtual void FailPending(const absl::Status& status, Deadline deadline) = 0;
  // Thread-safe: the transport is aborting; stop talking to the peer.
  virtual void OnAbort(const absl::Status& cause) = 0;

  // Largest payload one frame may carry on this link.
  virtual size_t max_payload_bytes() const = 0;
  // The frame size this link moves data best with (pipelined collectives cut data
  // into segments of this size, agreed over all workers: the smallest wins).
  virtual size_t preferred_payload_bytes() const { return max_payload_bytes(); }
  // "memory", "shm", "grpc".
  virtual absl::string_view kind() const = 0;
  // The peer, for messages: "worker:1 (127.0.0.1:2223)".
  const std::string& peer_name() const { return peer_name_; }
  void set_peer_name(std::string name) { peer_name_ = std::move(name); }
  // Pending work, for stall reports.
  virtual std::string DebugString() const = 0;

 protected:
  // Checks that an arrived frame is the one `expected` waits for; on a mismatch
  // returns FAILED_PRECONDITION (exit 7) describing both sides.
  absl::Status CheckFrame(const FrameHeader& got, const Request& expected) const;

  LinkEnv env_;
  std::string peer_name_;
};

// The error for a peer that closed its side while this task waits for `key`. A
// mismatch the peer found (FAILED_PRECONDITION) keeps its code, so every worker
// exits 7 for it; anything else is UNAVAILABLE (exit 3). `cause` may be OK when the
// peer did not say why (it crashed).
absl::Status PeerClosedError(const std::string& peer_name, const std::string& self_name,
                             const FrameKey& key, const absl::Status& cause);

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_TRANSPORT_LINK_H_
