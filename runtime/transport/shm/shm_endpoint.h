// This worker's shared-memory segment, and the peers' segments it maps, for the
// shared-memory links between workers on one host (shm_layout.h).
//
//   auto shm = ShmEndpoint::Create(rank, world_size, ring_bytes, incarnation);
//   join_request.set_shm_segment((*shm)->name());     // offered to every peer
//   // in the Join handler, when a peer offers its segment:
//   bool mapped = (*shm)->MapPeer(peer, request.shm_segment()).ok();
//   // after the rendezvous, for peers where both sides mapped:
//   transport->SetLink(peer, (*shm)->MakeLink(peer, liveness, max_payload));
//   (*shm)->Unlink();   // nothing is left in /dev/shm, whatever happens next
//
// Peers on another host cannot open the segment, and stay on gRPC. Segments of
// processes that died before unlinking theirs are removed by the next Create.
#ifndef RINGWORK_RUNTIME_TRANSPORT_SHM_SHM_ENDPOINT_H_
#define RINGWORK_RUNTIME_TRANSPORT_SHM_SHM_ENDPOINT_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/transport/link.h"
#include "runtime/transport/peer_liveness.h"
#include "runtime/transport/shm/shm_layout.h"

namespace ringwork {

// One mmap, unmapped on destruction.
class Mapping {
 public:
  Mapping() = default;
  Mapping(void* address, size_t bytes) : address_(address), bytes_(bytes) {}
  ~Mapping();
  Mapping(Mapping&& other) noexcept;
  Mapping& operator=(Mapping&& other) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  uint8_t* data() const { return static_cast<uint8_t*>(address_); }
  bool valid() const { return address_ != nullptr; }

 private:
  void* address_ = nullptr;
  size_t bytes_ = 0;
};

class ShmEndpoint {
 public:
  static absl::StatusOr<std::unique_ptr<ShmEndpoint>> Create(int rank, int world_size,
                                                             size_t ring_bytes,
                                                             uint64_t incarnation);
  ~ShmEndpoint();

  const std::string& name() const { return name_; }
  // This worker's doorbell, where peers ring it.
  DoorbellWord* bell() const;
  // Maps `peer`'s segment `segment_name`: its doorbell and its ring for frames from
  // this worker. Thread-safe; mapping the same name again is a no-op. Once a link
  // was made for `peer` its mapping is never replaced (FAILED_PRECONDITION): the
  // link points into it.
  absl::Status MapPeer(int peer, const std::string& segment_name);
  bool mapped(int peer) const;
  std::unique_ptr<Link> MakeLink(int peer, std::shared_ptr<PeerLiveness> liveness,
                                 size_t max_payload_bytes);
  // Removes the segment's name; every mapping stays valid.
  void Unlink();

 private:
  struct PeerMapping {
    std::string name;
    Mapping header;       // The peer's SegmentHeader page.
    Mapping slot;         // Its slot for frames from us.
    bool linked = false;  // A ShmLink points into the mappings.
  };
  ShmEndpoint(int rank, int world_size, size_t ring_bytes);

  const int rank_;
  const int world_size_;
  const size_t ring_bytes_;
  std::string name_;
  bool unlinked_ = false;
  Mapping own_;  // The whole segment.
  mutable std::mutex mu_;
  std::vector<PeerMapping> peers_;  // Guarded by mu_.
};

// Removes /dev/shm segments left by Ringwork processes that no longer exist.
void RemoveStaleShmSegments();

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_TRANSPORT_SHM_SHM_ENDPOINT_H_
