// A Link over gRPC. Each pair of workers has two Transfer calls, one opened by
// each to the other's server, and the pair's frames, both ways, travel on the one
// the lower rank opens (the "data call"): the lower rank writes on it as a client
// and reads the higher rank's frames from its responses; the higher rank reads and
// writes on it as the server (AttachInbound). One call carries a frame and the
// flow-control updates it causes over one TCP connection; with a call per
// direction each update crossed the other connection (raw gRPC, 4 B exchange:
// about 21 against 28 us, docs/PERFORMANCE.md). The other call (the "control
// call", opened by the higher rank) carries no frames: it authenticates the higher
// rank as the caller of this worker's server, its end tells the lower rank that the
// peer closed, and an aborting lower rank ends it with its first error. The higher
// rank proves itself on the data call too: its reply starts with metadata signed
// for the lower rank's process (RpcMethod::kTransferReply), checked before the
// first frame it sends is accepted (`check_reply`). Both servers answer so, and a
// cause in the status of this worker's own call (an rw-abort Finish) is believed
// only from a server that proved to be the peer.
// Each frame is one raw gRPC message: the 64-byte header in a small slice, and the
// payload in a slice that points straight at the caller's buffer, so tensor bytes
// are not copied on the way out; on the way in the sink reads them from the
// received slices.
//
// Reads: at most one Read is outstanding on the data call. When a frame whose
// payload is under kEagerReadBytes is delivered to a collective that waits (its
// thread borrows the queue: CompletionQueueLoop::DeliveringToBorrower), the next
// Read is not posted at once but owed. Poll posts it when a receive waits and
// nothing has arrived (inside Transport::Wait), PostRecv for a receive from
// kEagerReadBytes up, the loop thread when it takes the queue back after the
// collectives (PostOwedRead, from WorkerRuntime), BeginClose. Frames the loop
// thread delivers (between collectives, or always in a worker with a
// shared-memory peer, which never lends its queue) get the next Read at once.
// Why: chttp2 (1.51) sends a WINDOW_UPDATE as soon as a Read waits on a stream
// that has taken data. Posted in OnRead, that sendmsg (a few us here, plus a
// wake-up of the peer) fell between a frame's arrival and the collective waiting
// for it; owed, it leaves after this worker's own frame when the collective posted
// a send before waiting, and otherwise while it waits anyway. Frames a peer sends
// while a Read is owed stay in gRPC's buffer, bounded by the stream's window
// (16 MiB, DataStreamChannelSettings; with --grpc_bdp_probe at least 4 MiB, as the
// probe sizes it): during collectives a peer can run at most
// that far ahead of the receives (beyond it its sends complete once they are
// posted). A stream reset drops what gRPC buffers; the loop thread reads it out
// within a linger after the collectives ("during collectives" means while the
// waits come less than a linger apart).
//
// Threads: the Link methods run on the collective thread; gRPC completions (OnXxx
// methods) run on whichever thread drives the worker's CompletionQueueLoop: its
// loop thread, or the collective thread itself while it borrows the queue in a
// wait. They meet under `mu_`. gRPC calls that only queue work (PrepareCall,
// StartCall, TryCancel) may be made with `mu_` held: no handler runs inline.
#ifndef RINGWORK_RUNTIME_TRANSPORT_GRPC_GRPC_LINK_H_
#define RINGWORK_RUNTIME_TRANSPORT_GRPC_GRPC_LINK_H_

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/transport/grpc/cq_loop.h"
#include "runtime/transport/link.h"
#include "runtime/transport/peer_liveness.h"

namespace ringwork {

// The server side of a peer's Transfer call.
struct InboundCall {
  grpc::ServerContext context;
  grpc::ServerAsyncReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer> stream{&context};
};

// Checks the metadata a data call's server sent first: is it the peer?
using ReplyCheck =
    std::function<absl::Status(const std::multimap<grpc::string_ref, grpc::string_ref>&)>;

inline constexpr const char kTransferMethod[] = "/ringwork.proto.Worker/Transfer";
// Trailing metadata of a Transfer call a worker ended because it aborted: the
// status is its first error.
inline constexpr const char kAbortMetadataKey[] = "rw-abort";

class GrpcLink : public Link {
 public:
  struct Options {
    // Largest payload of one frame (the server's receive limit is set above it).
    size_t max_payload_bytes = 4 << 20;
    // Frames read before their receive was posted (all but those behind an owed
    // Read, see the header comment) are kept up to this many bytes; beyond it the
    // link stops reading, and gRPC's flow control holds the peer back.
    size_t max_buffered_bytes = 64 << 20;
  };

  // `cq` is driven by the transport's CompletionQueueLoop. `opens_data_call`: this
  // worker has the lower rank of the pair, and the call it opens carries the
  // frames (header comment). The link can take the peer's call (AttachInbound)
  // from construction on; sends wait until the data call is there.
  GrpcLink(grpc::CompletionQueue* cq, std::shared_ptr<PeerLiveness> liveness, Options options,
           bool opens_data_call);
  ~GrpcLink() override;

  // Starts the outbound Transfer call on `channel`; `metadata` identifies this
  // worker (rank, incarnation, fingerprint). Sends posted before it opens wait.
  // `check_reply` vets the server's first metadata: on the lower rank's data call
  // frames that come after metadata it refuses are dropped, and the peer counts
  // as gone with its error; on either call an abort's cause from such a server is
  // ignored. Without it nothing the server sends is believed.
  void OpenOutbound(std::shared_ptr<grpc::Channel> channel,
                    const std::vector<std::pair<std::string, std::string>>& metadata,
                    ReplyCheck check_reply = nullptr);
  // The peer's Transfer call, accepted by the server (loop thread), after its
  // caller was authenticated. `reply_metadata` goes out first on it (the higher
  // rank's proof, for the data call).
  void AttachInbound(std::unique_ptr<InboundCall> call,
                     const std::vector<std::pair<std::string, std::string>>& reply_metadata = {});
  // Closing, in two halves so that all links of a worker close at once (a worker
  // that waited for one peer before closing the next could wait in a circle):
  // BeginClose ends the outbound call cleanly once queued frames have left (and
  // posts an owed Read, through which the peer's end of stream arrives);
  // WaitClosed, after BeginClose or OnAbort, waits for every outstanding
  // operation and for the peer to end its stream, and cancels what is left at
  // `deadline`.
  void BeginClose(Deadline deadline);
  // After `deadline` what is still open is cancelled, and its completions get
  // `cancel_grace_s` more. Afterwards the link posts nothing to the queue again,
  // but the last completion may still be running: destroy the link only after
  // the thread driving the queue was joined (WorkerRuntime::Shutdown does).
  void WaitClosed(Deadline deadline, double cancel_grace_s = 5);

  // Posts the Read this link owes, if any (any thread; see the header comment).
  void PostOwedRead();

  void PostSend(Request* request) override;
  void PostRecv(Request* request) override;
  bool Poll() override;
  void FailPending(const absl::Status& status, Deadline deadline) override;
  void OnAbort(const absl::Status& cause) override;
  size_t max_payload_bytes() const override { return options_.max_payload_bytes; }
  // Each gRPC message costs tens of microseconds of framing and hand-offs: large
  // frames (measured best at 1 MiB here).
  size_t preferred_payload_bytes() const override {
    return std::min<size_t>(1 << 20, options_.max_payload_bytes);
  }
  absl::string_view kind() const override { return "grpc"; }
  std::string DebugString() const override;

 private:
  enum class Outbound { kIdle, kStarting, kOpen, kClosing, kClosed, kBroken };
  // kFinishing: this worker aborted and ended the peer's call with its cause.
  enum class Inbound { kNone, kReading, kEnded, kFinishing, kFinished };
  // How long a receive that found the peer's stream ended waits for the peer's
  // reason to arrive on the other call before it fails without one.
  static constexpr int kCauseGraceMs = 200;
  // Frames from this size up get the next Read posted at once; after a smaller one
  // delivered to a waiting collective it is owed (see the header comment).
  static constexpr size_t kEagerReadBytes = 64 << 10;
  // The cause sent to a peer (in gRPC's status message: its metadata is bounded).
  static constexpr size_t kMaxCauseBytes = 2048;

  // Binds a completion to a member function.
  class Tag : public CqTag {
   public:
    Tag(GrpcLink* link, void (GrpcLink::*fn)(bool)) : link_(link), fn_(fn) {}
    void OnEvent(bool ok) override { (link_->*fn_)(ok); }

   private:
    GrpcLink* link_;
    void (GrpcLink::*fn_)(bool);
  };

  // Loop-thread completions.
  void OnStartCall(bool ok);
  void OnWriteDone(bool ok);
  void OnWritesDone(bool ok);
  void OnResponse(bool ok);
  void OnOutboundFinish(bool ok);
  void OnRead(bool ok);
  // The lower rank's Read on the control call: only its end is expected.
  void OnControlRead(bool ok);
  void OnInboundFinish(bool ok);

  // Takes the next queued send and marks it in flight; the caller writes it
  // (outside the lock). Null when nothing can be written now.
  Request* TakeNextWrite_Locked();
  void Write(Request* request);
  // Frames can be written on the data call now / will never be.
  bool SendsOpen_Locked() const;
  bool SendsRefused_Locked() const;
  // The higher rank: its own call to the peer failed or ended and the peer's
  // call (the data call) never came: the peer is gone.
  bool DataCallNeverCame_Locked() const;
  // Reads go on on the data call (a Read is out, owed or paused).
  bool DataReadOpen_Locked() const;
  void OnReplyMetadataSent(bool ok);
  // The higher rank's abort: its cause, as the one message of its control call.
  void OnCauseWritten(bool ok);
  // The clean Finish of the peer's call, when it is due (its end was read and,
  // where it is the data call, this worker's writes are over); the caller posts it
  // with PostInboundFinish outside mu_.
  bool TakeInboundFinish_Locked();
  void PostInboundFinish();
  // The outbound call's reads ended (the higher rank's watch, the lower rank's
  // data Read found the end, or its server's proof was refused): Finish it, if
  // not yet (the ending Read's operation count carries over).
  void FinishOutboundCall();
  // The outbound call's server proved to be the peer (check_reply_, once a Read or
  // Finish completed on it); `why` tells why not.
  bool ReplyProven(absl::Status* why = nullptr);
  // The owed Read (read_owed_), counted as an operation for the caller to post
  // with StartRead outside mu_; false when none is owed.
  bool TakeOwedRead_Locked();
  void StartRead();
  void OperationDone();
  void FailQueuedSends(const absl::Status& status);
  void MarkPeerGone(const absl::Status& cause);

  grpc::CompletionQueue* cq_;  // Not owned.
  std::shared_ptr<PeerLiveness> liveness_;
  const Options options_;

  Tag start_call_tag_{this, &GrpcLink::OnStartCall};
  Tag write_tag_{this, &GrpcLink::OnWriteDone};
  Tag writes_done_tag_{this, &GrpcLink::OnWritesDone};
  Tag response_tag_{this, &GrpcLink::OnResponse};
  Tag outbound_finish_tag_{this, &GrpcLink::OnOutboundFinish};
  Tag read_tag_{this, &GrpcLink::OnRead};
  Tag inbound_finish_tag_{this, &GrpcLink::OnInboundFinish};
  Tag control_read_tag_{this, &GrpcLink::OnControlRead};
  Tag reply_metadata_tag_{this, &GrpcLink::OnReplyMetadataSent};
  Tag cause_write_tag_{this, &GrpcLink::OnCauseWritten};
  const bool opens_data_call_;
  ReplyCheck check_reply_;  // Set before the outbound call opens.

  // Outbound call objects: created by OpenOutbound, used by one operation at a time.
  std::unique_ptr<grpc::ClientContext> out_context_;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> out_stream_;
  grpc::ByteBuffer response_;
  grpc::Status finish_status_;
  // Inbound call: the read target of the one outstanding Read.
  std::unique_ptr<InboundCall> inbound_call_;
  grpc::ByteBuffer read_buffer_;
  grpc::ByteBuffer control_buffer_;  // The lower rank's Read on the control call.
  grpc::ByteBuffer cause_buffer_;    // The higher rank's abort cause, being written.

  // Held while posting an inbound Read or the abort's Finish (never with mu_ held
  // first), so that no Read is posted after that Finish.
  std::mutex post_mu_;
  mutable std::mutex mu_;
  std::condition_variable drained_;      // Signalled as operations finish.
  Outbound outbound_ = Outbound::kIdle;  // Guarded by mu_.
  Inbound inbound_ = Inbound::kNone;     // Guarded by mu_.
  int refused_streams_ = 0;              // Guarded by mu_.
  bool closing_ = false;                 // Guarded by mu_.
  bool read_paused_ = false;             // Guarded by mu_.
  bool read_owed_ = false;               // The next Read is owed (header). Guarded by mu_.
  // The outbound call's reads go on (the higher rank's watch Read is pending; the
  // lower rank reads frames there until the call ends). Guarded by mu_.
  bool watching_ = false;
  bool replies_ended_ = false;              // The lower rank's data call ended. Guarded by mu_.
  std::atomic<bool> reply_checked_{false};  // The outbound call's server proved itself.
  bool sends_closed_ = false;               // BeginClose drained the sends. Guarded by mu_.
  bool sends_broken_ = false;               // A write on the data call failed. Guarded by mu_.
  bool inbound_finish_posted_ = false;      // Guarded by mu_.
  bool reply_metadata_sent_ = false;        // The higher rank's proof is out. Guarded by mu_.
  bool cause_written_ = false;              // OnAbort wrote its cause. Guarded by mu_.
  bool no_more_ops_ = false;                // WaitClosed ended: post nothing. Guarded by mu_.
  bool finishing_ = false;                  // Finish was called on the outbound. Guarded by mu_.
  int outstanding_ops_ = 0;                 // Guarded by mu_.
  RequestQueue send_queue_;                 // Guarded by mu_.
  Request* write_in_flight_ = nullptr;      // Guarded by mu_.
  std::deque<grpc::ByteBuffer> arrived_;    // Guarded by mu_.
  size_t arrived_bytes_ = 0;                // Guarded by mu_.

  // Collective thread only.
  RequestQueue recvs_;
  std::optional<std::chrono::steady_clock::time_point> cause_grace_until_;
  std::vector<grpc::Slice> slices_;  // Reused per frame.
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_TRANSPORT_GRPC_GRPC_LINK_H_
