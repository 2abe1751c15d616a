#include "runtime/transport/grpc/grpc_link.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "runtime/transport/grpc/grpc_util.h"
#include "runtime/transport/piece_feeder.h"

namespace ringwork {

GrpcLink::GrpcLink(grpc::CompletionQueue* cq, std::shared_ptr<PeerLiveness> liveness,
                   Options options, bool opens_data_call)
    : cq_(cq),
      liveness_(std::move(liveness)),
      options_(options),
      opens_data_call_(opens_data_call) {}

GrpcLink::~GrpcLink() {
  std::unique_lock<std::mutex> lock(mu_);
  if (outstanding_ops_ > 0) {
    RW_LOG(ERROR) << "gRPC link to " << peer_name_ << " destroyed with " << outstanding_ops_
                  << " operations outstanding";
  }
}

void GrpcLink::OpenOutbound(std::shared_ptr<grpc::Channel> channel,
                            const std::vector<std::pair<std::string, std::string>>& metadata,
                            ReplyCheck check_reply) {
  // All under mu_: an abort or close on another thread reads out_context_ and
  // out_stream_ under mu_, and must not see a call that is not started yet (gRPC
  // allows no other operation before StartCall). StartCall only queues its batch;
  // its completion comes through the queue, whose thread takes mu_ after this.
  std::lock_guard<std::mutex> lock(mu_);
  if (outbound_ != Outbound::kIdle || closing_) return;
  check_reply_ = std::move(check_reply);
  outbound_ = Outbound::kStarting;
  ++outstanding_ops_;
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
  bool no_data_call = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --outstanding_ops_;
    if (outbound_ == Outbound::kStarting) {
      outbound_ = ok ? Outbound::kOpen : Outbound::kBroken;
    }
    if (!ok && opens_data_call_) replies_ended_ = true;  // Receives fail (Poll).
    // The higher rank: the peer's call never came either, so nothing will be sent.
    no_data_call = !ok && !opens_data_call_ && DataCallNeverCame_Locked();
    if (ok && !finishing_ && !no_more_ops_) {
      // The lower rank reads the peer's frames here until the call ends. The
      // higher rank's watch: a Read that completes when the peer ends this call,
      // at an orderly close or when it aborts (its first error, which then tells
      // this worker the root cause). Held from here until Finish completes.
      watching_ = true;
      watch = true;
      ++outstanding_ops_;
    }
    next = TakeNextWrite_Locked();
  }
  if (watch && opens_data_call_) out_stream_->Read(&read_buffer_, &read_tag_);
  if (watch && !opens_data_call_) out_stream_->Read(&response_, &response_tag_);
  if (!ok) MarkPeerGone(absl::OkStatus());
  if (!ok && (opens_data_call_ || no_data_call)) {
    FailQueuedSends(
        absl::UnavailableError(absl::StrCat("could not open the data stream to ", peer_name_)));
  }
  if (next != nullptr) Write(next);
  env_.bell->Ring();
  drained_.notify_all();
}

void GrpcLink::PostSend(Request* request) {
  Request* next = nullptr;
  absl::Status refused;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A peer that aborted and said why takes no more frames either.
    if (SendsRefused_Locked() || (liveness_->gone() && !liveness_->cause().ok())) {
      refused = absl::UnavailableError(absl::StrCat("the data stream to ", peer_name_,
                                                    " is closed; cannot send frame ",
                                                    request->key.ToString()));
    } else {
      send_queue_.push_back(request);
      next = TakeNextWrite_Locked();
    }
  }
  if (!refused.ok()) {
    // A peer that aborted said why: that is the error (it may name a third worker).
    const absl::Status cause = liveness_->cause();
    CompleteRequest(
        request,
        cause.ok() ? refused : PeerClosedError(peer_name_, env_.self_name, request->key, cause));
    return;
  }
  if (next != nullptr) Write(next);
}

bool GrpcLink::SendsOpen_Locked() const {
  if (sends_broken_) return false;
  if (opens_data_call_) return outbound_ == Outbound::kOpen && !finishing_;
  // The server may write after the peer ended its half, until it finishes.
  return (inbound_ == Inbound::kReading || inbound_ == Inbound::kEnded) &&
         !inbound_finish_posted_ && reply_metadata_sent_;
}

bool GrpcLink::DataReadOpen_Locked() const {
  if (opens_data_call_) return watching_ && !replies_ended_ && !finishing_;
  return inbound_ == Inbound::kReading && !inbound_finish_posted_;
}

bool GrpcLink::SendsRefused_Locked() const {
  if (sends_broken_ || sends_closed_) return true;
  if (opens_data_call_) {
    return outbound_ == Outbound::kBroken || outbound_ == Outbound::kClosed ||
           outbound_ == Outbound::kClosing || finishing_;
  }
  // Before the peer's call arrives sends wait (unless this worker closes, or its
  // own call to the peer failed or ended: the peer is gone); once it is over they
  // are refused.
  return inbound_ == Inbound::kFinishing || inbound_ == Inbound::kFinished ||
         inbound_finish_posted_ || (inbound_ == Inbound::kNone && closing_) ||
         DataCallNeverCame_Locked();
}

bool GrpcLink::DataCallNeverCame_Locked() const {
  return !opens_data_call_ && inbound_ == Inbound::kNone &&
         (outbound_ == Outbound::kBroken || outbound_ == Outbound::kClosed);
}

Request* GrpcLink::TakeNextWrite_Locked() {
  if (write_in_flight_ != nullptr || send_queue_.empty() || no_more_ops_ || !SendsOpen_Locked()) {
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
      request->bytes > 0 ? grpc::Slice(request->data, request->bytes, grpc::Slice::STATIC_SLICE)
                         : grpc::Slice(),
  };
  grpc::ByteBuffer buffer(slices, request->bytes > 0 ? 2 : 1);
  if (opens_data_call_) {
    out_stream_->Write(buffer, &write_tag_);
  } else {
    inbound_call_->stream.Write(buffer, &write_tag_);
  }
}

void GrpcLink::OnWriteDone(bool ok) {
  RW_VLOG(3) << "frame written to " << peer_name_ << (ok ? "" : " (failed)");
  Request* done = nullptr;
  Request* next = nullptr;
  bool broke = false;
  bool finish_inbound = false;
  bool post_owed_read = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --outstanding_ops_;
    done = write_in_flight_;
    write_in_flight_ = nullptr;
    if (!ok && !sends_broken_) {
      sends_broken_ = true;
      if (outbound_ == Outbound::kOpen && opens_data_call_) outbound_ = Outbound::kBroken;
      broke = !closing_;
    }
    next = TakeNextWrite_Locked();
    finish_inbound = TakeInboundFinish_Locked();
    // The peer's call failed or ended: its status says why (the lower rank reads it).
    post_owed_read = !ok && TakeOwedRead_Locked();
  }
  if (post_owed_read) StartRead();
  if (ok) {
    done->progress = done->bytes;
    CompleteRequest(done, absl::OkStatus());
  } else {
    const absl::Status cause = liveness_->cause();
    CompleteRequest(done, !cause.ok()
                              ? PeerClosedError(peer_name_, env_.self_name, done->key, cause)
                              : absl::UnavailableError(absl::StrCat(
                                    "lost the connection to ", peer_name_, " while sending frame ",
                                    done->key.ToString(), " (the peer failed or exited)")));
  }
  env_.bell->Ring();
  if (broke) {
    MarkPeerGone(absl::OkStatus());
    FailQueuedSends(done->status);
  }
  if (next != nullptr) Write(next);
  if (finish_inbound) PostInboundFinish();
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

void GrpcLink::AttachInbound(
    std::unique_ptr<InboundCall> call,
    const std::vector<std::pair<std::string, std::string>>& reply_metadata) {
  RW_VLOG(2) << (opens_data_call_ ? "control" : "data") << " stream from " << peer_name_
             << " accepted";
  Request* next = nullptr;
  // Under post_mu_, as the abort's Finish: gRPC's initial-metadata flag is not
  // thread-safe, so it is sent here before any Write or Finish can be posted.
  std::lock_guard<std::mutex> post(post_mu_);
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
    for (const auto& [key, value] : reply_metadata) {
      inbound_call_->context.AddInitialMetadata(key, value);
    }
    inbound_ = Inbound::kReading;
    outstanding_ops_ += 2;
  }
  // The proof goes out at once on either call (on the control call it would
  // otherwise ride with the Finish, where gRPC may fold it into the trailers).
  inbound_call_->stream.SendInitialMetadata(&reply_metadata_tag_);
  if (opens_data_call_) {
    inbound_call_->stream.Read(&control_buffer_, &control_read_tag_);
    return;
  }
  inbound_call_->stream.Read(&read_buffer_, &read_tag_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    reply_metadata_sent_ = true;
    next = TakeNextWrite_Locked();  // The higher rank's sends waited for this call.
  }
  if (next != nullptr) Write(next);
}

void GrpcLink::OnReplyMetadataSent(bool) {
  std::lock_guard<std::mutex> lock(mu_);
  --outstanding_ops_;
  drained_.notify_all();
}

void GrpcLink::StartRead() {
  // Posting and the abort's Finish take post_mu_, so that no Read follows a Finish.
  std::lock_guard<std::mutex> post(post_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!DataReadOpen_Locked() || no_more_ops_) {
      --outstanding_ops_;  // Counted by the caller; never posted.
      drained_.notify_all();
      return;
    }
  }
  if (opens_data_call_) {
    out_stream_->Read(&read_buffer_, &read_tag_);
  } else {
    inbound_call_->stream.Read(&read_buffer_, &read_tag_);
  }
}

void GrpcLink::OnRead(bool ok) {
  RW_VLOG(3) << "read from " << peer_name_ << (ok ? "" : ": end of stream");
  // The lower rank takes the peer's frames once the server proved to be the peer.
  absl::Status refused;
  if (ok && opens_data_call_ && !ReplyProven(&refused)) {
    read_buffer_.Clear();
    const absl::Status cause =
        absl::UnauthenticatedError(absl::StrCat("the server at the address of ", peer_name_,
                                                " answered the data stream without "
                                                "proving it is that worker: ",
                                                refused.message()));
    RW_LOG(ERROR) << cause.message();
    MarkPeerGone(cause);
    out_context_->TryCancel();
    FinishOutboundCall();  // Takes over this Read's operation count.
    drained_.notify_all();
    return;
  }
  bool read_again = false;
  bool data_call_ended = false;
  bool finish = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --outstanding_ops_;
    if (!opens_data_call_ && inbound_finish_posted_) {
      // This worker ended the call (it closed, or aborted with its cause): drop
      // what arrives.
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
    } else if (opens_data_call_) {
      // The server ended the data call: at an orderly close, or its abort's cause
      // (or its death) comes with the call's status.
      replies_ended_ = true;
      data_call_ended = true;
      ++outstanding_ops_;  // For FinishOutboundCall.
    } else {
      inbound_ = Inbound::kEnded;
      finish = TakeInboundFinish_Locked();
    }
  }
  if (read_again) StartRead();
  if (data_call_ended) FinishOutboundCall();
  // The peer ended its stream: cleanly at shutdown, or because it died.
  if (!ok && !opens_data_call_) MarkPeerGone(absl::OkStatus());
  if (finish) PostInboundFinish();
  env_.bell->Ring();
  drained_.notify_all();
}

bool GrpcLink::ReplyProven(absl::Status* why) {
  if (reply_checked_.load(std::memory_order_acquire)) return true;  // Every frame asks.
  // The server's initial metadata is there once a Read or Finish completed.
  absl::Status checked = check_reply_ != nullptr
                             ? check_reply_(out_context_->GetServerInitialMetadata())
                             : absl::FailedPreconditionError("this link has no check for it");
  if (!checked.ok()) {
    if (why != nullptr) *why = checked;
    return false;
  }
  reply_checked_.store(true, std::memory_order_release);
  return true;
}

bool GrpcLink::TakeInboundFinish_Locked() {
  if (inbound_finish_posted_ || no_more_ops_) return false;
  if (opens_data_call_) {
    if (inbound_ != Inbound::kEnded) return false;
  } else {
    // The higher rank ends the data call once the peer ended its half, or once it
    // closes itself (so the peer's receives end too); its frames go out first.
    const bool over =
        inbound_ == Inbound::kEnded || (inbound_ == Inbound::kReading && sends_closed_);
    if (!over || write_in_flight_ != nullptr || (!send_queue_.empty() && SendsOpen_Locked())) {
      return false;
    }
    inbound_ = Inbound::kEnded;  // A Read still out completes, and is dropped.
  }
  inbound_finish_posted_ = true;
  ++outstanding_ops_;
  return true;
}

void GrpcLink::PostInboundFinish() {
  std::lock_guard<std::mutex> post(post_mu_);
  inbound_call_->stream.Finish(grpc::Status::OK, &inbound_finish_tag_);
}

void GrpcLink::FinishOutboundCall() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    watching_ = false;
    if (finishing_ || no_more_ops_) {
      --outstanding_ops_;
      if (no_more_ops_) outbound_ = Outbound::kClosed;
      drained_.notify_all();
      return;
    }
    finishing_ = true;
  }
  out_stream_->Finish(&finish_status_, &outbound_finish_tag_);
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
        // The higher rank: the data call ended, or never came and the peer is
        // gone (this worker's own call to it failed or ended).
        peer_ended = opens_data_call_
                         ? replies_ended_
                         : inbound_ == Inbound::kEnded || inbound_ == Inbound::kFinished ||
                               DataCallNeverCame_Locked();
        // A receive waits and nothing is here: now the Read is needed. Where the
        // collective posted a send before it waits, its WINDOW_UPDATE leaves after
        // this worker's own frame; in any case while it waits for the peer's.
        post_owed_read = TakeOwedRead_Locked();
      } else {
        frame.Swap(&arrived_.front());
        arrived_.pop_front();
        arrived_bytes_ -= frame.Length();
        if (read_paused_ && arrived_bytes_ < options_.max_buffered_bytes / 2 &&
            DataReadOpen_Locked()) {
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
      check = absl::InvalidArgumentError(
          absl::StrCat("frame from ", peer_name_, " announces ", header->payload_bytes,
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

std::string GrpcLink::DebugString() const {
  std::lock_guard<std::mutex> lock(mu_);
  return absl::StrCat(recvs_.size(), " receives pending, ", arrived_.size(), " frames buffered (",
                      arrived_bytes_, " bytes), ", send_queue_.size(), " sends queued",
                      write_in_flight_ ? ", one being written" : "",
                      read_owed_ ? ", next read not yet posted" : "");
}

}  // namespace ringwork
