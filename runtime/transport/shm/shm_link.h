// A Link through shared memory, for a peer on the same host: frames to the peer go
// into the ring in the peer's segment, frames from it come out of the ring in ours
// (shm_layout.h). No thread of its own: the Transport's wait loop moves the bytes,
// so data moves on the cores that wait for it, and a frame costs no system call
// unless a side sleeps.
//
// Failure: a peer that aborts marks the rings closed; a peer that dies is noticed
// by the gRPC link to it (shared PeerLiveness), since both sides keep their gRPC
// streams open for exactly that.
#ifndef RINGWORK_RUNTIME_TRANSPORT_SHM_SHM_LINK_H_
#define RINGWORK_RUNTIME_TRANSPORT_SHM_SHM_LINK_H_

#include <memory>

#include "runtime/transport/link.h"
#include "runtime/transport/peer_liveness.h"
#include "runtime/transport/shm/shm_ring.h"

namespace ringwork {

class ShmLink : public Link {
 public:
  struct Rings {
    RingHeader* out_header;  // Ours to produce into (in the peer's segment).
    uint8_t* out_data;
    RingHeader* in_header;  // Ours to consume from (in our segment).
    uint8_t* in_data;
    size_t ring_bytes;
    DoorbellWord* peer_bell;  // In the peer's segment.
  };
  ShmLink(const Rings& rings, int self_rank, std::shared_ptr<PeerLiveness> liveness,
          size_t max_payload_bytes);

  void PostSend(Request* request) override;
  void PostRecv(Request* request) override;
  bool Poll() override;
  void FailPending(const absl::Status& status, Deadline deadline) override;
  void OnAbort(const absl::Status& cause) override;
  size_t max_payload_bytes() const override { return max_payload_bytes_; }
  // Small enough that a segment's reduction stays in cache while the next one is
  // copied (measured best at 256 KiB with a 4 MiB ring).
  size_t preferred_payload_bytes() const override {
    return std::min<size_t>(256 << 10, max_payload_bytes_);
  }
  absl::string_view kind() const override { return "shm"; }
  std::string DebugString() const override;

 private:
  // Why the peer went away: the cause it wrote when it aborted, else the one its
  // gRPC stream delivered; OK when it gave none.
  absl::Status PeerCause() const;

  Rings rings_;
  Doorbell peer_bell_;
  std::shared_ptr<PeerLiveness> liveness_;
  const size_t max_payload_bytes_;
  ShmRingProducer producer_;
  ShmRingConsumer consumer_;
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_TRANSPORT_SHM_SHM_LINK_H_
