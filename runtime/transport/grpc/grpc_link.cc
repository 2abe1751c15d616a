#include "runtime/transport/grpc/grpc_link.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "runtime/transport/grpc/grpc_util.h"
#include "runtime/transport/piece_feeder.h"

namespace ringwork {

GrpcLink::GrpcLink(grpc::CompletionQueue* cq, std::shared_ptr<PeerLiveness> liveness,
                   Options options)
    : cq_(cq), liveness_(std::move(liveness)), options_(options) {}

GrpcLink::~GrpcLink() {
  std::unique_lock<std::mutex> lock(mu_);
  if (outstanding_ops_ > 0) {
    RW_LOG(ERROR) << "gRPC link to " << peer_name_ << " destroyed with " << outstanding_ops_
                  << " operations outstanding";
  }
}

void GrpcLink::OpenOutbound(
    std::shared_ptr<grpc::Channel> channel,
    const std::vector<std::pair<std::string, std::string>>& metadata) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (outbound_ != Outbound::kIdle || closing_) return;
    outbound_ = Outbound::kStarting;
    ++outstanding_ops_;
  }
  out_context_ = std::make_unique<grpc::ClientContext>();
  for (const auto& [key, value] : metadata) out_context_->AddMetadata(key, value);
  grpc::GenericStub stub(channel);
  out_stream_ = stub.PrepareCall(out_context_.get(), kTransferMethod, cq_);
  out_stream_->StartCall(&start_call_tag_);
}

void GrpcLink::OnStartCall(bool ok) {
  RW_VLOG(2) << "data stream to " << peer_name_ << (ok ? " open" : " failed to open");
  Request* next = nullptr;
  bool watch = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --outstanding_ops_;
    if (outbound_ == Outbound::kStarting) {
      outbound_ = ok ? Outbound::kOpen : Outbound::kBroken;
    }
    if (ok && !finishing_ && !no_more_ops_) {
      // The watch: a Read that completes when the peer ends this call, at an
      // orderly close (its reply) or when it aborts (its first error, which then
      // tells this worker the root cause). Held from here until Finish completes.
      watching_ = true;
      watch = true;
      ++outstanding_ops_;
    }
    if (outbound_ == Outbound::kOpen) next = TakeNextWrite_Locked();
  }
  if (watch) out_stream_->Read(&response_, &response_tag_);
  if (!ok) {
    MarkPeerGone(absl::OkStatus());
    FailQueuedSends(absl::UnavailableError(
        absl::StrCat("could not open the data stream to ", peer_name_)));
  }
  if (next != nullptr) Write(next);
  drained_.notify_all();
}

void GrpcLink::PostSend(Request* request) {
  Request* next = nullptr;
  absl::Status refused;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (outbound_ == Outbound::kBroken || outbound_ == Outbound::kClosed ||
        outbound_ == Outbound::kClosing || finishing_) {
      refused = absl::UnavailableError(absl::StrCat(
          "the data stream to ", peer_name_, " is closed; cannot send frame ",
          request->key.ToString()));
    } else {
      send_queue_.push_back(request);
      if (outbound_ == Outbound::kOpen) next = TakeNextWrite_Locked();
    }
  }
  if (!refused.ok()) {
    // A peer that aborted said why: that is the error (it may name a third worker).
    const absl::Status cause = liveness_->cause();
    CompleteRequest(request, cause.ok() ? refused
                                        : PeerClosedError(peer_name_, env_.self_name, request->key,
                                                          cause));
    return;
  }
  if (next != nullptr) Write(next);
}

Request* GrpcLink::TakeNextWrite_Locked() {
  if (write_in_flight_ != nullptr || send_queue_.empty() || finishing_ || no_more_ops_) {
    return nullptr;
  }
  write_in_flight_ = send_queue_.pop_front();
  ++outstanding_ops_;
  return write_in_flight_;
}

void GrpcLink::Write(Request* request) {
  FrameHeader header;
  header.sender_rank = static_cast<uint32_t>(env_.self_rank);
  header.key = request->key;
  header.info = request->info;
  header.payload_bytes = request->bytes;
  uint8_t header_bytes[kFrameHeaderBytes];
  EncodeFrameHeader(header, header_bytes);
  // The payload slice points at the caller's buffer (no copy, no reference count).
  // The request completes when the write does: chttp2 reports a write done once its
  // bytes are in the kernel's socket buffer, and TCP zero-copy sends (which would
  // read the buffer later) are off (GRPC_ARG_TCP_TX_ZEROCOPY_ENABLED, channel
  // arguments in worker_runtime.cc). gRPC may keep the slice object a little longer,
  // but never reads it again; a static slice makes that harmless.
  grpc::Slice slices[2] = {
      grpc::Slice(header_bytes, kFrameHeaderBytes),  // Copies 64 bytes.
      request->bytes > 0 ? grpc::Slice(request->data, request->bytes,
                                       grpc::Slice::STATIC_SLICE)
                         : grpc::Slice(),
  };
  grpc::ByteBuffer buffer(slices, request->bytes > 0 ? 2 : 1);
  out_stream_->Write(buffer, &write_tag_);
}

void GrpcLink::OnWriteDone(bool ok) {
  RW_VLOG(3) << "frame written to " << peer_name_ << (ok ? "" : " (failed)");
  Request* done = nullptr;
  Request* next = nullptr;
  bool broke = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --outstanding_ops_;
    done = write_in_flight_;
    write_in_flight_ = nullptr;
    if (!ok && outbound_ == Outbound::kOpen) {
      outbound_ = Outbound::kBroken;
      broke = !closing_;
    }
    if (ok && outbound_ == Outbound::kOpen) next = TakeNextWrite_Locked();
  }
  if (ok) {
    done->progress = done->bytes;
    CompleteRequest(done, absl::OkStatus());
  } else {
    const absl::Status cause = liveness_->cause();
    CompleteRequest(done, !cause.ok() ? PeerClosedError(peer_name_, env_.self_name, done->key, cause)
                                      : absl::UnavailableError(absl::StrCat(
                                            "lost the connection to ", peer_name_,
                                            " while sending frame ", done->key.ToString(),
                                            " (the peer failed or exited)")));
  }
  env_.bell->Ring();
  if (broke) {
    MarkPeerGone(absl::OkStatus());
    FailQueuedSends(done->status);
  }
  if (next != nullptr) Write(next);
  drained_.notify_all();
}

void GrpcLink::FailQueuedSends(const absl::Status& status) {
  RequestQueue failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (Request* r = send_queue_.pop_front()) failed.push_back(r);
  }
  while (Request* r = failed.pop_front()) CompleteRequest(r, status);
  env_.bell->Ring();
}

void GrpcLink::AttachInbound(std::unique_ptr<InboundCall> call) {
  RW_VLOG(2) << "data stream from " << peer_name_ << " accepted";
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (inbound_ != Inbound::kNone || closing_) {
      // Once per link: a flood of streams must not flood the log.
      if (refused_streams_++ == 0) {
        RW_LOG(WARNING) << "refused a second data stream from " << peer_name_ << " (from "
                        << call->context.peer() << "; logged once)";
      }
      call->context.TryCancel();
      // The refused call has no pending operation; it is released here.
      return;
    }
    inbound_call_ = std::move(call);
    inbound_ = Inbound::kReading;
    ++outstanding_ops_;
  }
  inbound_call_->reader.Read(&read_buffer_, &read_tag_);
}

void GrpcLink::StartRead() {
  // Posting and the abort's Finish take post_mu_, so that no Read follows a Finish.
  std::lock_guard<std::mutex> post(post_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (inbound_ != Inbound::kReading || no_more_ops_) {
      --outstanding_ops_;  // Counted by the caller; never posted.
      drained_.notify_all();
      return;
    }
  }
  inbound_call_->reader.Read(&read_buffer_, &read_tag_);
}

void GrpcLink::OnRead(bool ok) {
  RW_VLOG(3) << "read from " << peer_name_ << (ok ? "" : ": end of stream");
  bool read_again = false;
  bool finish = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --outstanding_ops_;
    if (inbound_ == Inbound::kFinishing) {
      // This worker aborted and ended the call with its cause: drop what arrives.
      drained_.notify_all();
      return;
    }
    if (ok) {
      arrived_bytes_ += read_buffer_.Length();
      arrived_.emplace_back();
      arrived_.back().Swap(&read_buffer_);
      if (arrived_bytes_ >= options_.max_buffered_bytes) {
        read_paused_ = true;
      } else if (!closing_ && arrived_.back().Length() < kFrameHeaderBytes + kEagerReadBytes &&
                 CompletionQueueLoop::DeliveringToBorrower()) {
        // A small frame, to a collective that waits: the next Read waits until a
        // receive wants it (header comment).
        read_owed_ = true;
      } else {
        // Large, or on the loop thread (nobody waits: nothing to gain), or closing
        // (drain to the end of the stream).
        read_again = true;
        ++outstanding_ops_;
      }
    } else {
      inbound_ = Inbound::kEnded;
      finish = true;
      ++outstanding_ops_;
    }
  }
  if (read_again) StartRead();
  if (finish) {
    // The peer ended its stream: cleanly at shutdown, or because it died.
    MarkPeerGone(absl::OkStatus());
    std::lock_guard<std::mutex> post(post_mu_);
    bool post_finish = true;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (no_more_ops_) {
        post_finish = false;
        --outstanding_ops_;
        inbound_ = Inbound::kFinished;
      }
    }
    if (post_finish) {
      inbound_call_->reader.Finish(grpc::ByteBuffer(), grpc::Status::OK, &inbound_finish_tag_);
    }
  }
  env_.bell->Ring();
  drained_.notify_all();
}

void GrpcLink::OnInboundFinish(bool) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --outstanding_ops_;
    inbound_ = Inbound::kFinished;
  }
  drained_.notify_all();
}

void GrpcLink::MarkPeerGone(const absl::Status& cause) {
  liveness_->MarkGone(cause);
  if (env_.bell != nullptr) env_.bell->Ring();  // A waiter may be in its grace period.
}

bool GrpcLink::TakeOwedRead_Locked() {
  if (!read_owed_) return false;
  read_owed_ = false;
  ++outstanding_ops_;
  return true;
}

void GrpcLink::PostOwedRead() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!TakeOwedRead_Locked()) return;
  }
  StartRead();
}

void GrpcLink::PostRecv(Request* request) {
  recvs_.push_back(request);
  // A large receive gets its Read at once (its data streams in meanwhile); a
  // small one when Poll finds nothing there (after this worker's own send, where
  // the collective posted one first).
  if (request->bytes < kEagerReadBytes) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!arrived_.empty() || !TakeOwedRead_Locked()) return;
  }
  StartRead();
}

bool GrpcLink::Poll() {
  if (recvs_.empty()) return false;
  // A peer that aborted and said why: its collective is over, whatever is buffered.
  if (liveness_->gone()) {
    const absl::Status cause = liveness_->cause();
    if (!cause.ok()) {
      env_.fail(PeerClosedError(peer_name_, env_.self_name, recvs_.front()->key, cause));
      return true;
    }
  }
  bool progressed = false;
  while (!recvs_.empty()) {
    grpc::ByteBuffer frame;
    bool resume_reading = false;
    bool peer_ended = false;
    bool post_owed_read = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (arrived_.empty()) {
        peer_ended = inbound_ == Inbound::kEnded || inbound_ == Inbound::kFinished;
        // A receive waits and nothing is here: now the Read is needed. Where the
        // collective posted a send before it waits, its WINDOW_UPDATE leaves after
        // this worker's own frame; in any case while it waits for the peer's.
        post_owed_read = TakeOwedRead_Locked();
      } else {
        frame.Swap(&arrived_.front());
        arrived_.pop_front();
        arrived_bytes_ -= frame.Length();
        if (read_paused_ && arrived_bytes_ < options_.max_buffered_bytes / 2 &&
            inbound_ == Inbound::kReading) {
          read_paused_ = false;
          resume_reading = true;
          ++outstanding_ops_;
        }
      }
    }
    if (resume_reading || post_owed_read) StartRead();
    if (frame.Length() == 0) {
      if (peer_ended) {
        // The peer's reason (its abort ends our outbound call with it) may arrive a
        // moment after its end of stream: give it that moment.
        absl::Status cause = liveness_->cause();
        const auto now = std::chrono::steady_clock::now();
        if (cause.ok() && !cause_grace_until_.has_value()) {
          cause_grace_until_ = now + std::chrono::milliseconds(kCauseGraceMs);
        }
        if (cause.ok() && now < *cause_grace_until_) break;
        env_.fail(PeerClosedError(peer_name_, env_.self_name, recvs_.front()->key, cause));
        return true;
      }
      break;
    }
    Request* recv = recvs_.front();
    (void)frame.Dump(&slices_);
    uint8_t header_bytes[kFrameHeaderBytes];
    size_t have = 0, slice = 0, skip = 0;
    while (have < kFrameHeaderBytes && slice < slices_.size()) {
      const size_t take = std::min(kFrameHeaderBytes - have, slices_[slice].size());
      std::memcpy(header_bytes + have, slices_[slice].begin(), take);
      have += take;
      if (take == slices_[slice].size()) {
        ++slice;
      } else {
        skip = take;
      }
    }
    absl::StatusOr<FrameHeader> header =
        DecodeFrameHeader(header_bytes, have, options_.max_payload_bytes);
    absl::Status check = header.ok() ? CheckFrame(*header, *recv) : header.status();
    if (check.ok() && frame.Length() != kFrameHeaderBytes + header->payload_bytes) {
      check = absl::InvalidArgumentError(absl::StrCat(
          "frame from ", peer_name_, " announces ", header->payload_bytes,
          " payload bytes but carries ", frame.Length() - kFrameHeaderBytes));
    }
    if (!check.ok()) {
      if (!header.ok()) {
        check = absl::InvalidArgumentError(
            absl::StrCat("bad frame from ", peer_name_, ": ", check.message()));
      }
      env_.fail(check);
      return true;
    }
    PieceFeeder feeder(recv->sink, DataTypeSize(recv->info.dtype));
    for (; slice < slices_.size(); ++slice) {
      feeder.Feed(slices_[slice].begin() + skip, slices_[slice].size() - skip);
      skip = 0;
    }
    recv->progress = feeder.fed_bytes();
    slices_.clear();
    recvs_.pop_front();
    CompleteRequest(recv, absl::OkStatus());
    progressed = true;
  }
  return progressed;
}

void GrpcLink::FailPending(const absl::Status& status, Deadline deadline) {
  FailQueuedSends(status);
  while (Request* recv = recvs_.pop_front()) CompleteRequest(recv, status);
  std::unique_lock<std::mutex> lock(mu_);
  arrived_.clear();
  arrived_bytes_ = 0;
  if (write_in_flight_ != nullptr) {
    // gRPC may still read the caller's buffer: cancel, and wait for the write.
    if (out_context_ != nullptr) out_context_->TryCancel();
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
  {
    std::lock_guard<std::mutex> post(post_mu_);
    bool finish_inbound = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      closing_ = true;
      cancel_outbound = out_context_ != nullptr;
      if (inbound_ == Inbound::kReading && !no_more_ops_) {
        inbound_ = Inbound::kFinishing;
        ++outstanding_ops_;
        finish_inbound = true;
      }
    }
    // First end the peer's call with our first error, which tells it why (marked
    // rw-abort; cut to fit gRPC's metadata limits, root cause first)...
    if (finish_inbound) {
      const absl::Status sent(cause.code(), cause.message().substr(0, kMaxCauseBytes));
      inbound_call_->context.AddTrailingMetadata(kAbortMetadataKey, "1");
      inbound_call_->reader.Finish(grpc::ByteBuffer(), ToGrpcStatus(sent), &inbound_finish_tag_);
    }
  }
  // ...then cancel ours, which tells it at once that this worker gives up.
  if (cancel_outbound) out_context_->TryCancel();
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
  {
    std::unique_lock<std::mutex> lock(mu_);
    // Let queued frames leave first (bounded by the deadline).
    while ((write_in_flight_ != nullptr || !send_queue_.empty()) &&
           outbound_ == Outbound::kOpen && !deadline.Expired()) {
      drained_.wait_for(lock, std::chrono::milliseconds(5));
    }
    if (outbound_ == Outbound::kOpen && write_in_flight_ == nullptr && !finishing_) {
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
  {
    std::lock_guard<std::mutex> lock(mu_);
    watching_ = false;
    finishing_ = true;
    if (no_more_ops_) {
      --outstanding_ops_;
      outbound_ = Outbound::kClosed;
      drained_.notify_all();
      return;
    }
  }
  out_stream_->Finish(&finish_status_, &outbound_finish_tag_);
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
    RW_VLOG(1) << "data stream to " << peer_name_ << " ended by the peer: "
               << (cause.ok() ? finish_status_.error_message() : std::string(cause.message()));
    MarkPeerGone(cause);
    const std::string ended = absl::StrCat(peer_name_, " ended the data stream from ",
                                           env_.self_name);
    FailQueuedSends(cause.ok()
                        ? absl::UnavailableError(absl::StrCat(ended, " (it failed or exited)"))
                        : absl::Status(cause.code(), absl::StrCat(cause.message(), " (reported by ",
                                                                  ended, ")")));
  }
  drained_.notify_all();
}

std::string GrpcLink::DebugString() const {
  std::lock_guard<std::mutex> lock(mu_);
  return absl::StrCat(recvs_.size(), " receives pending, ", arrived_.size(),
                      " frames buffered (", arrived_bytes_, " bytes), ", send_queue_.size(),
                      " sends queued", write_in_flight_ ? ", one being written" : "",
                      read_owed_ ? ", next read not yet posted" : "");
}

}  // namespace ringwork
