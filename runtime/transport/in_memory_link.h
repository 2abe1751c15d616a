// Links between ranks that live in one process (a thread per rank), for tests of
// the collective algorithms without a network. A receive copies straight from the
// sender's buffer, so a send completes when its receiver has consumed it.
//
//   InMemoryNetwork network(/*world_size=*/4);
//   // thread r: Communicator comm(network.transport(r), options); comm.AllReduce(...)
//   network.Kill(2);   // rank 2 "dies": its peers see their links close
#ifndef RINGWORK_RUNTIME_TRANSPORT_IN_MEMORY_LINK_H_
#define RINGWORK_RUNTIME_TRANSPORT_IN_MEMORY_LINK_H_

#include <functional>
#include <memory>
#include <vector>

#include "runtime/transport/transport.h"

namespace ringwork {

class InMemoryNetwork {
 public:
  // Lets a test wrap the link from `self` to `peer` (fault injection).
  using LinkWrapper =
      std::function<std::unique_ptr<Link>(int self, int peer, std::unique_ptr<Link>)>;

  explicit InMemoryNetwork(int world_size, Transport::Options options = Transport::Options(),
                           size_t max_payload_bytes = 1 << 20, LinkWrapper wrap = nullptr);
  ~InMemoryNetwork();
  InMemoryNetwork(const InMemoryNetwork&) = delete;
  InMemoryNetwork& operator=(const InMemoryNetwork&) = delete;

  int world_size() const { return static_cast<int>(transports_.size()); }
  Transport* transport(int rank) { return transports_[rank].get(); }
  // Simulates the death of `rank`: aborts its transport; its peers' links report
  // the peer gone to their pending and later receives.
  void Kill(int rank);

  struct Wire;  // One direction between two ranks.

 private:
  std::vector<std::unique_ptr<Wire>> wires_;  // wires_[from * n + to]
  std::vector<std::unique_ptr<Transport>> transports_;
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_TRANSPORT_IN_MEMORY_LINK_H_
