#include "runtime/transport/in_memory_link.h"

#include <atomic>
#include <deque>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "base/check.h"

namespace ringwork {

// Sends posted by one rank for another, in order. The receiver consumes a send
// while holding `mu`, so a sender that fails its pending sends (taking `mu`) knows
// no receiver is still reading its buffer.
struct InMemoryNetwork::Wire {
  std::mutex mu;
  std::deque<Request*> sends ABSL_GUARDED_BY(mu);
  bool closed ABSL_GUARDED_BY(mu) = false;
  // Why each end aborted, for the error its peer reports.
  absl::Status sender_cause ABSL_GUARDED_BY(mu);
  absl::Status receiver_cause ABSL_GUARDED_BY(mu);
  Doorbell* receiver_bell = nullptr;  // Not owned.
  Doorbell* sender_bell = nullptr;    // Not owned.
};

namespace {

using Wire = InMemoryNetwork::Wire;

class InMemoryLink : public Link {
 public:
  InMemoryLink(Wire* out, Wire* in, size_t max_payload_bytes)
      : out_(out), in_(in), max_payload_bytes_(max_payload_bytes) {}

  void PostSend(Request* request) override {
    std::lock_guard<std::mutex> lock(out_->mu);
    if (out_->closed) {
      CompleteRequest(request, absl::UnavailableError(absl::StrCat(peer_name_, " is gone")));
      return;
    }
    out_->sends.push_back(request);
    pending_sends_.fetch_add(1, std::memory_order_relaxed);
    out_->receiver_bell->Ring();
  }

  void PostRecv(Request* request) override { recvs_.push_back(request); }

  bool Poll() override {
    if (pending_sends_.load(std::memory_order_relaxed) > 0) FailSendsIfPeerClosed();
    if (recvs_.empty()) return false;
    bool progressed = false;
    absl::Status failure;
    {
      std::lock_guard<std::mutex> lock(in_->mu);
      while (!recvs_.empty() && !in_->sends.empty()) {
        Request* send = in_->sends.front();
        Request* recv = recvs_.front();
        FrameHeader header;
        header.sender_rank = static_cast<uint32_t>(recv->peer);
        header.key = send->key;
        header.info = send->info;
        header.payload_bytes = send->bytes;
        failure = CheckFrame(header, *recv);
        if (!failure.ok()) break;
        // Consumed under the lock: a sender failing its sends takes the lock, so it
        // knows no receiver still reads its buffer.
        if (send->bytes > 0) {
          recv->sink.consume(recv->sink.context, 0, send->data, send->bytes);
        }
        recv->progress = send->bytes;
        send->progress = send->bytes;
        in_->sends.pop_front();
        recvs_.pop_front();
        peer_pending_sends_->fetch_sub(1, std::memory_order_relaxed);
        CompleteRequest(recv, absl::OkStatus());
        CompleteRequest(send, absl::OkStatus());
        in_->sender_bell->Ring();
        progressed = true;
      }
      if (failure.ok() && !recvs_.empty() && in_->sends.empty() && in_->closed) {
        failure =
            PeerClosedError(peer_name_, env_.self_name, recvs_.front()->key, in_->sender_cause);
      }
    }
    if (!failure.ok()) {
      env_.fail(failure);  // Outside the lock: aborting closes this wire.
      return true;
    }
    return progressed;
  }

  void FailPending(const absl::Status& status, Deadline) override {
    {
      std::lock_guard<std::mutex> lock(out_->mu);
      for (Request* send : out_->sends) CompleteRequest(send, status);
      out_->sends.clear();
      pending_sends_.store(0);
    }
    while (Request* recv = recvs_.pop_front()) CompleteRequest(recv, status);
  }

  void OnAbort(const absl::Status& cause) override {
    {
      std::lock_guard<std::mutex> lock(out_->mu);
      out_->closed = true;
      out_->sender_cause = cause;
    }
    {
      std::lock_guard<std::mutex> lock(in_->mu);
      in_->closed = true;
      in_->receiver_cause = cause;
    }
    out_->receiver_bell->Ring();
    in_->sender_bell->Ring();
  }

  size_t max_payload_bytes() const override { return max_payload_bytes_; }
  absl::string_view kind() const override { return "memory"; }

  // The peer's link, whose counter of sends we decrement as we consume them.
  void set_peer_pending_sends(std::atomic<int>* counter) { peer_pending_sends_ = counter; }
  std::atomic<int>* pending_sends() { return &pending_sends_; }
  std::string DebugString() const override {
    return absl::StrCat(recvs_.size(), " receives pending");
  }

 private:
  Wire* out_;  // Not owned.
  Wire* in_;   // Not owned.
  const size_t max_payload_bytes_;
  RequestQueue recvs_;
  std::atomic<int> pending_sends_{0};               // Our sends not yet consumed.
  std::atomic<int>* peer_pending_sends_ = nullptr;  // Not owned.

  // A peer that aborted will never consume what we queued for it.
  void FailSendsIfPeerClosed() {
    absl::Status failure;
    {
      std::lock_guard<std::mutex> lock(out_->mu);
      if (!out_->closed || out_->sends.empty()) return;
      failure = PeerClosedError(peer_name_, env_.self_name, out_->sends.front()->key,
                                out_->receiver_cause);
    }
    env_.fail(failure);
  }
};

}  // namespace

InMemoryNetwork::InMemoryNetwork(int world_size, Transport::Options options,
                                 size_t max_payload_bytes, LinkWrapper wrap) {
  RW_CHECK_GT(world_size, 0);
  for (int r = 0; r < world_size; ++r) {
    transports_.push_back(std::make_unique<Transport>(r, world_size, options));
    transports_.back()->set_self_name(absl::StrCat("rank ", r));
  }
  wires_.resize(world_size * world_size);
  for (int from = 0; from < world_size; ++from) {
    for (int to = 0; to < world_size; ++to) {
      if (from == to) continue;
      auto wire = std::make_unique<Wire>();
      wire->sender_bell = transports_[from]->bell();
      wire->receiver_bell = transports_[to]->bell();
      wires_[from * world_size + to] = std::move(wire);
    }
  }
  std::vector<InMemoryLink*> raw(world_size * world_size, nullptr);
  std::vector<std::unique_ptr<Link>> made(world_size * world_size);
  for (int self = 0; self < world_size; ++self) {
    for (int peer = 0; peer < world_size; ++peer) {
      if (self == peer) continue;
      auto link =
          std::make_unique<InMemoryLink>(wires_[self * world_size + peer].get(),
                                         wires_[peer * world_size + self].get(), max_payload_bytes);
      link->set_peer_name(absl::StrCat("rank ", peer));
      raw[self * world_size + peer] = link.get();
      made[self * world_size + peer] = std::move(link);
    }
  }
  for (int self = 0; self < world_size; ++self) {
    for (int peer = 0; peer < world_size; ++peer) {
      if (self == peer) continue;
      raw[self * world_size + peer]->set_peer_pending_sends(
          raw[peer * world_size + self]->pending_sends());
      std::unique_ptr<Link> installed = std::move(made[self * world_size + peer]);
      if (wrap) installed = wrap(self, peer, std::move(installed));
      transports_[self]->SetLink(peer, std::move(installed));
    }
  }
}

InMemoryNetwork::~InMemoryNetwork() {
  // Close every transport while all are alive (closing rings the peers' doorbells),
  // then destroy them before the wires their links point into.
  for (auto& transport : transports_) {
    if (!transport->aborted()) transport->Abort(absl::CancelledError("network closed"));
  }
  transports_.clear();
}

void InMemoryNetwork::Kill(int rank) {
  transports_[rank]->Abort(absl::AbortedError(absl::StrCat("rank ", rank, " killed")));
}

}  // namespace ringwork
