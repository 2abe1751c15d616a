// A send or a receive posted to a Transport. The caller owns it and keeps it (and
// the memory it points to) alive until Transport::Wait says it is done; requests
// are reused across collectives, so nothing is allocated per message.
//
//   Request send;
//   send.PrepareSend(peer, key, info, data, bytes);
//   transport->PostSend(&send);
//   ...
//   absl::Status st = transport->Wait(&send, deadline);
#ifndef RINGWORK_RUNTIME_TRANSPORT_REQUEST_H_
#define RINGWORK_RUNTIME_TRANSPORT_REQUEST_H_

#include <atomic>
#include <cstddef>

#include "absl/status/status.h"
#include "runtime/transport/frame.h"

namespace ringwork {

// Where received bytes go. `consume` is called with consecutive pieces of the
// payload (offsets increase, pieces are whole elements), always on the thread
// that called Transport::Wait, never on a transport thread, so reductions run on
// the caller's core.
struct RecvSink {
  using ConsumeFn = void (*)(void* context, size_t offset, const void* src, size_t bytes);
  ConsumeFn consume = nullptr;
  void* context = nullptr;  // Not owned.
};

struct Request {
  enum class Kind : unsigned char { kSend, kRecv };

  void PrepareSend(int to, FrameKey frame_key, const CollectiveInfo& collective,
                   const void* payload, size_t payload_bytes) {
    Reset(Kind::kSend, to, frame_key, collective, payload_bytes);
    data = payload;
  }
  void PrepareRecv(int from, FrameKey frame_key, const CollectiveInfo& collective,
                   size_t payload_bytes, RecvSink recv_sink) {
    Reset(Kind::kRecv, from, frame_key, collective, payload_bytes);
    sink = recv_sink;
  }
  bool is_done() const { return done.load(std::memory_order_acquire); }

  // --- Set by the poster. ---
  Kind kind = Kind::kSend;
  int peer = -1;
  FrameKey key;
  CollectiveInfo info;
  size_t bytes = 0;
  const void* data = nullptr;  // kSend: the payload. Not owned.
  RecvSink sink;               // kRecv.

  // --- Owned by the transport and its links while the request is pending. ---
  std::atomic<bool> done{true};
  absl::Status status;                 // Valid once done.
  size_t progress = 0;                 // Payload bytes moved so far (link-private meaning).
  std::atomic<int> pending_events{0};  // Link-private completion counter.
  Request* next = nullptr;             // Intrusive queue link.
  void* link_data = nullptr;           // Link-private (the gRPC link finds itself from here).

 private:
  void Reset(Kind k, int p, FrameKey frame_key, const CollectiveInfo& collective,
             size_t payload_bytes) {
    kind = k;
    peer = p;
    key = frame_key;
    info = collective;
    bytes = payload_bytes;
    data = nullptr;
    sink = RecvSink();
    status = absl::OkStatus();
    progress = 0;
    pending_events.store(0, std::memory_order_relaxed);
    next = nullptr;
    link_data = nullptr;
    done.store(false, std::memory_order_relaxed);
  }
};

// Marks `request` done with `status`; the Transport's waiter sees it after its next
// doorbell check.
inline void CompleteRequest(Request* request, absl::Status status) {
  request->status = std::move(status);
  request->done.store(true, std::memory_order_release);
}

// A FIFO of requests threaded through Request::next. Not thread-safe.
class RequestQueue {
 public:
  bool empty() const { return head_ == nullptr; }
  Request* front() const { return head_; }
  size_t size() const { return size_; }
  void push_back(Request* r) {
    r->next = nullptr;
    if (tail_ == nullptr) {
      head_ = tail_ = r;
    } else {
      tail_->next = r;
      tail_ = r;
    }
    ++size_;
  }
  Request* pop_front() {
    Request* r = head_;
    if (r == nullptr) return nullptr;
    head_ = r->next;
    if (head_ == nullptr) tail_ = nullptr;
    r->next = nullptr;
    --size_;
    return r;
  }

 private:
  Request* head_ = nullptr;
  Request* tail_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_TRANSPORT_REQUEST_H_
