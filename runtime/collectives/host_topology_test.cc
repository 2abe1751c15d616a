// HostTopology from host keys: host numbering, local indices, peers across hosts,
// uniformity, and its description.
#include "runtime/collectives/host_topology.h"

#include <catch2/catch.hpp>

namespace ringwork {
namespace {

TEST_CASE("host topology from host keys", "[topology]") {
  const HostTopology t = HostTopology::FromHostKeys({5, 5, 2, 2, 9, 9});
  CHECK(t.world_size() == 6);
  CHECK(t.hosts() == 3);
  CHECK(t.uniform());
  CHECK(t.host_of(0) == 0);
  CHECK(t.host_of(3) == 1);
  CHECK(t.host_of(5) == 2);
  CHECK(t.local_index(4) == 0);
  CHECK(t.local_index(5) == 1);
  CHECK(t.members(1) == std::vector<int>{2, 3});
  CHECK(t.peers_across(3) == std::vector<int>{1, 3, 5});
  CHECK(t.ToString() == "3 hosts x 2 workers");
  CHECK(t.layered());

  const HostTopology interleaved = HostTopology::FromHostKeys({0, 1, 0, 1});
  CHECK(interleaved.members(0) == std::vector<int>{0, 2});
  CHECK(interleaved.peers_across(2) == std::vector<int>{2, 3});

  const HostTopology ragged = HostTopology::FromHostKeys({0, 0, 0, 3});
  CHECK_FALSE(ragged.uniform());
  CHECK_FALSE(ragged.layered());
  CHECK(ragged.ToString() == "2 hosts (3, 1 workers)");

  const HostTopology alone = HostTopology::OnePerRank(3);
  CHECK(alone.hosts() == 3);
  CHECK(alone.uniform());
  CHECK(alone.ToString() == "3 hosts x 1 worker");
  CHECK_FALSE(alone.layered());
  CHECK_FALSE(HostTopology::FromHostKeys({0, 0, 0}).layered());
}

}  // namespace
}  // namespace ringwork
