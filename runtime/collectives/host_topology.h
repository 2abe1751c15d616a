// Which ranks share a host (can map each other's shared memory), as every rank of
// the group agreed on it (Communicator::LearnTopology all-gathers it). The
// hierarchical all-reduce runs within hosts over shared memory and between hosts
// over the network.
//
//   HostTopology t = HostTopology::FromHostKeys({0, 0, 2, 2});  // 2 hosts x 2
//   t.hosts();                 // 2
//   t.uniform();               // true: every host has 2 ranks
//   t.host_of(3);              // 1
//   t.local_index(3);          // 1: second rank of its host
//   t.members(1);              // {2, 3}
//   t.peers_across(3);         // {1, 3}: local index 1 on every host
#ifndef RINGWORK_RUNTIME_COLLECTIVES_HOST_TOPOLOGY_H_
#define RINGWORK_RUNTIME_COLLECTIVES_HOST_TOPOLOGY_H_

#include <string>
#include <vector>

namespace ringwork {

class HostTopology {
 public:
  // Every rank on its own host (what is assumed until the ranks agreed).
  static HostTopology OnePerRank(int world_size);
  // `keys[r]` names rank r's host (equal keys: same host). Hosts are numbered in
  // the order of their lowest rank; ranks within a host in rank order.
  static HostTopology FromHostKeys(const std::vector<int>& keys);

  int world_size() const { return static_cast<int>(host_of_.size()); }
  int hosts() const { return static_cast<int>(members_.size()); }
  int host_of(int rank) const { return host_of_[rank]; }
  int local_index(int rank) const { return local_index_[rank]; }
  const std::vector<int>& members(int host) const { return members_[host]; }
  // The ranks with `rank`'s local index, one per host, in host order (requires
  // uniform()).
  std::vector<int> peers_across(int rank) const;
  // Every host has the same number of ranks.
  bool uniform() const;
  // uniform(), with 2+ hosts of 2+ ranks: where the hierarchical all-reduce pays.
  bool layered() const { return uniform() && hosts() >= 2 && members_.front().size() >= 2; }
  // "2 hosts x 2 workers" or "3 hosts (2, 2, 1 workers)".
  std::string ToString() const;

 private:
  std::vector<int> host_of_;
  std::vector<int> local_index_;
  std::vector<std::vector<int>> members_;
};

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_COLLECTIVES_HOST_TOPOLOGY_H_
