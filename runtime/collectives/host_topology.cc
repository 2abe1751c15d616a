#include "runtime/collectives/host_topology.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace ringwork {

HostTopology HostTopology::OnePerRank(int world_size) {
  std::vector<int> keys(world_size);
  for (int r = 0; r < world_size; ++r) keys[r] = r;
  return FromHostKeys(keys);
}

HostTopology HostTopology::FromHostKeys(const std::vector<int>& keys) {
  HostTopology t;
  const int p = static_cast<int>(keys.size());
  t.host_of_.assign(p, 0);
  t.local_index_.assign(p, 0);
  std::map<int, int> host_by_key;  // First seen (lowest rank) first.
  for (int r = 0; r < p; ++r) {
    auto [it, added] = host_by_key.emplace(keys[r], static_cast<int>(t.members_.size()));
    if (added) t.members_.emplace_back();
    t.host_of_[r] = it->second;
    t.local_index_[r] = static_cast<int>(t.members_[it->second].size());
    t.members_[it->second].push_back(r);
  }
  return t;
}

std::vector<int> HostTopology::peers_across(int rank) const {
  std::vector<int> peers;
  for (const std::vector<int>& host : members_) peers.push_back(host[local_index_[rank]]);
  return peers;
}

bool HostTopology::uniform() const {
  for (const std::vector<int>& host : members_) {
    if (host.size() != members_.front().size()) return false;
  }
  return true;
}

std::string HostTopology::ToString() const {
  if (members_.empty()) return "no hosts";
  if (uniform()) {
    return absl::StrCat(hosts(), hosts() == 1 ? " host" : " hosts", " x ", members_.front().size(),
                        members_.front().size() == 1 ? " worker" : " workers");
  }
  std::vector<size_t> sizes;
  for (const std::vector<int>& host : members_) sizes.push_back(host.size());
  return absl::StrCat(hosts(), " hosts (", absl::StrJoin(sizes, ", "), " workers)");
}

}  // namespace ringwork
