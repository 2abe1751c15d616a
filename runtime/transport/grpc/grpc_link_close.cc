// How a GrpcLink ends: an orderly close (BeginClose, WaitClosed), an abort
// (OnAbort, FailPending) and the completions that end its calls. See grpc_link.h.
#include <chrono>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/logging.h"
#include "runtime/transport/grpc/grpc_link.h"
#include "runtime/transport/grpc/grpc_util.h"

namespace ringwork {
namespace {

// The one message a higher rank may send on its control call: its abort's cause,
// "rw-abort\n<code>\n<message>".
std::string EncodeCause(const absl::Status& cause, size_t max_message_bytes) {
  return absl::StrCat(kAbortMetadataKey, "\n", static_cast<int>(cause.code()), "\n",
                      cause.message().substr(0, max_message_bytes));
}

// The cause, or INVALID_ARGUMENT naming what is wrong with the message.
absl::Status DecodeCause(const grpc::ByteBuffer& buffer, size_t max_message_bytes,
                         const std::string& peer_name) {
  const absl::Status bad = absl::InvalidArgumentError(
      absl::StrCat(peer_name,
                   " sent a message on its control stream that is not an abort's cause (a "
                   "worker of another Ringwork build?)"));
  if (buffer.Length() > max_message_bytes + 64) return bad;
  std::vector<grpc::Slice> slices;
  if (!buffer.Dump(&slices).ok()) return bad;
  std::string text;
  for (const grpc::Slice& slice : slices) {
    text.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  std::vector<std::string> parts = absl::StrSplit(text, absl::MaxSplits('\n', 2));
  int code = 0;
  if (parts.size() != 3 || parts[0] != kAbortMetadataKey || !absl::SimpleAtoi(parts[1], &code) ||
      code <= 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    return bad;
  }
  return absl::Status(static_cast<absl::StatusCode>(code), parts[2]);
}

}  // namespace

void GrpcLink::FailPending(const absl::Status& status, Deadline deadline) {
  FailQueuedSends(status);
  while (Request* recv = recvs_.pop_front()) CompleteRequest(recv, status);
  std::unique_lock<std::mutex> lock(mu_);
  arrived_.clear();
  arrived_bytes_ = 0;
  if (write_in_flight_ != nullptr) {
    // gRPC may still read the caller's buffer: cancel, and wait for the write.
    if (opens_data_call_ && out_context_ != nullptr) out_context_->TryCancel();
    if (!opens_data_call_ && inbound_call_ != nullptr) inbound_call_->context.TryCancel();
    while (write_in_flight_ != nullptr && !deadline.Expired()) {
      drained_.wait_for(lock, std::chrono::milliseconds(10));
    }
    if (write_in_flight_ != nullptr) {
      RW_LOG(ERROR) << "a write to " << peer_name_ << " is still in flight after the "
                    << "abort deadline";
    }
  }
}

void GrpcLink::OnAbort(const absl::Status& cause) {
  bool cancel_outbound = false;
  bool write_cause = false;
  {
    std::lock_guard<std::mutex> post(post_mu_);
    bool finish_inbound = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      closing_ = true;
      // The higher rank's cause: its Finish of the data call may wait behind a
      // frame that flow control holds, so it goes on the control call too (its
      // only message), which is then cancelled (OnCauseWritten).
      write_cause = !opens_data_call_ && outbound_ == Outbound::kOpen && watching_ && !finishing_ &&
                    !cause_written_ && !no_more_ops_;
      if (write_cause) {
        cause_written_ = true;
        ++outstanding_ops_;
      }
      // (A second OnAbort leaves the cancel to OnCauseWritten as well.)
      cancel_outbound = out_context_ != nullptr && !write_cause && !cause_written_;
      const bool open =
          inbound_ == Inbound::kReading || (inbound_ == Inbound::kEnded && !inbound_finish_posted_);
      if (open && !no_more_ops_) {
        inbound_ = Inbound::kFinishing;
        inbound_finish_posted_ = true;
        ++outstanding_ops_;
        finish_inbound = true;
      }
    }
    // First end the peer's call with our first error, which tells it why (marked
    // rw-abort; cut to fit gRPC's metadata limits, root cause first)...
    if (finish_inbound) {
      const absl::Status sent(cause.code(), cause.message().substr(0, kMaxCauseBytes));
      inbound_call_->context.AddTrailingMetadata(kAbortMetadataKey, "1");
      inbound_call_->stream.Finish(ToGrpcStatus(sent), &inbound_finish_tag_);
    }
  }
  // ...then cancel ours, which tells it at once that this worker gives up (or
  // write the cause there, the higher rank, which tells it as soon).
  if (write_cause) {
    grpc::Slice slice(EncodeCause(cause, kMaxCauseBytes));
    cause_buffer_ = grpc::ByteBuffer(&slice, 1);
    out_stream_->Write(cause_buffer_, &cause_write_tag_);
  }
  if (cancel_outbound) out_context_->TryCancel();
}

void GrpcLink::OnCauseWritten(bool) {
  // The cause is in the socket, and the peer always has a Read waiting for it on
  // this call: cancel now (its reset follows the message), so that shutting down
  // waits for nobody, not even a stopped peer.
  out_context_->TryCancel();
  std::lock_guard<std::mutex> lock(mu_);
  --outstanding_ops_;
  drained_.notify_all();
}

void GrpcLink::OnControlRead(bool ok) {
  bool finish = false;
  bool post_owed_read = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --outstanding_ops_;
    if (inbound_finish_posted_) {  // This worker ended the call already (abort).
      drained_.notify_all();
      return;
    }
    inbound_ = Inbound::kEnded;
    finish = TakeInboundFinish_Locked();
    // The data call's status may say more: read it.
    post_owed_read = TakeOwedRead_Locked();
  }
  if (ok) {
    // The peer aborted and said why (or sent what it must not: an error too).
    const absl::Status cause = DecodeCause(control_buffer_, kMaxCauseBytes, peer_name_);
    control_buffer_.Clear();
    RW_VLOG(1) << peer_name_ << " gave up: " << cause.message();
    MarkPeerGone(cause);
    FailQueuedSends(absl::Status(
        cause.code(),
        absl::StrCat(cause.message(), " (reported by ", peer_name_, " to ", env_.self_name, ")")));
  } else {
    MarkPeerGone(absl::OkStatus());  // The peer closed (orderly), or died.
  }
  if (post_owed_read) StartRead();
  if (finish) PostInboundFinish();
  env_.bell->Ring();
  drained_.notify_all();
}

void GrpcLink::BeginClose(Deadline deadline) {
  enum class Step { kNone, kWritesDone, kCancel, kCancelAndFinish } step = Step::kNone;
  bool post_owed_read = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
    // The peer's end of stream completes a Read: WaitClosed waits for it.
    post_owed_read = TakeOwedRead_Locked();
  }
  if (post_owed_read) StartRead();
  bool finish_inbound = false;
  {
    std::unique_lock<std::mutex> lock(mu_);
    // Let queued frames leave first (bounded by the deadline).
    while ((write_in_flight_ != nullptr || !send_queue_.empty()) && SendsOpen_Locked() &&
           !deadline.Expired()) {
      drained_.wait_for(lock, std::chrono::milliseconds(5));
    }
    sends_closed_ = true;
    // The higher rank's data call (the peer's) ends once the peer's end has come.
    finish_inbound = TakeInboundFinish_Locked();
    const bool writes_over = !opens_data_call_ || write_in_flight_ == nullptr;
    if (cause_written_) {
      // Aborted: the control call is cancelled once the cause is written.
    } else if (outbound_ == Outbound::kOpen && writes_over && !finishing_) {
      // Clean end of stream: WritesDone; the watch Read gets the reply, then Finish.
      step = Step::kWritesDone;
      ++outstanding_ops_;
    } else if (out_stream_ != nullptr && outbound_ != Outbound::kClosing &&
               outbound_ != Outbound::kClosed) {
      if (watching_) {
        step = Step::kCancel;  // Broken or still busy: the watch ends, then Finish.
      } else if (!finishing_) {
        step = Step::kCancelAndFinish;  // It never opened: nothing watches it.
        finishing_ = true;
        ++outstanding_ops_;
      }
    }
    if (step != Step::kNone) outbound_ = Outbound::kClosing;
  }
  if (step == Step::kWritesDone) out_stream_->WritesDone(&writes_done_tag_);
  if (step == Step::kCancel || step == Step::kCancelAndFinish) out_context_->TryCancel();
  if (step == Step::kCancelAndFinish) out_stream_->Finish(&finish_status_, &outbound_finish_tag_);
  if (finish_inbound) PostInboundFinish();
}

void GrpcLink::WaitClosed(Deadline deadline, double cancel_grace_s) {
  std::unique_lock<std::mutex> lock(mu_);
  // Wait for our outbound call to finish and for the peer to end its stream.
  auto busy = [&] { return outstanding_ops_ > 0 || inbound_ == Inbound::kReading; };
  while (busy() && !deadline.Expired()) {
    drained_.wait_for(lock, std::chrono::milliseconds(10));
  }
  if (busy()) {
    lock.unlock();
    if (out_context_ != nullptr) out_context_->TryCancel();
    if (inbound_call_ != nullptr) inbound_call_->context.TryCancel();
    lock.lock();
    // A paused inbound call (or one whose Read is owed) has no Read to end: it
    // counts as ended now.
    if (inbound_ == Inbound::kReading) inbound_ = Inbound::kEnded;
    const Deadline grace = Deadline::AfterSeconds(cancel_grace_s);
    while (outstanding_ops_ > 0 && !grace.Expired()) {
      drained_.wait_for(lock, std::chrono::milliseconds(10));
    }
  }
  // The completion queue goes next: from here on nothing is posted (completions
  // still arriving are only counted).
  no_more_ops_ = true;
}

void GrpcLink::OnWritesDone(bool) {
  // The watch Read completes with the server's reply (or the call's end).
  {
    std::lock_guard<std::mutex> lock(mu_);
    --outstanding_ops_;
  }
  drained_.notify_all();
}

void GrpcLink::OnResponse(bool) {
  // The watch ended: the peer replied (orderly close) or the call ended. Its
  // operation count carries over to Finish.
  FinishOutboundCall();
}

void GrpcLink::OnOutboundFinish(bool) {
  bool peer_ended_it = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --outstanding_ops_;
    peer_ended_it = !closing_ && outbound_ != Outbound::kClosed;
    if (outbound_ == Outbound::kOpen || outbound_ == Outbound::kStarting) {
      outbound_ = Outbound::kBroken;
    }
    if (closing_ || outbound_ == Outbound::kClosing) outbound_ = Outbound::kClosed;
  }
  if (peer_ended_it) {
    // The peer ended our stream before we closed it: it aborted (its first error
    // comes marked rw-abort) or it died.
    absl::Status cause;
    const auto& trailing = out_context_->GetServerTrailingMetadata();
    if (!finish_status_.ok() && trailing.find(kAbortMetadataKey) != trailing.end()) {
      cause = FromGrpcStatus(finish_status_);
    }
    // Only the proven peer may give a cause (either call: its server answers with
    // its proof first).
    if (!cause.ok() && !ReplyProven()) cause = absl::OkStatus();
    RW_VLOG(1) << "data stream to " << peer_name_ << " ended by the peer: "
               << (cause.ok() ? finish_status_.error_message() : std::string(cause.message()));
    MarkPeerGone(cause);
    const std::string ended =
        absl::StrCat(peer_name_, " ended the data stream from ", env_.self_name);
    FailQueuedSends(cause.ok()
                        ? absl::UnavailableError(absl::StrCat(ended, " (it failed or exited)"))
                        : absl::Status(cause.code(), absl::StrCat(cause.message(), " (reported by ",
                                                                  ended, ")")));
  }
  drained_.notify_all();
}

}  // namespace ringwork
