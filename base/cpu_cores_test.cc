// How a worker's share of the cores is found: divided among the host's workers
// unless a scheduler already bound it; capped by a cgroup quota.
#include "base/cpu_cores.h"

#include <catch2/catch.hpp>

namespace ringwork {
namespace {

TEST_CASE("the host's cores are divided among its workers", "[cpu_cores]") {
  CHECK(CoresPerWorker(/*affinity=*/16, /*online=*/16, /*quota=*/0, /*workers=*/4) == 4);
  CHECK(CoresPerWorker(2, 2, 0, 2) == 1);
  CHECK(CoresPerWorker(2, 2, 0, 3) == 1);  // Never below one.
}

TEST_CASE("a worker bound to its own cores is not divided again", "[cpu_cores]") {
  // Slurm, --ntasks-per-node=2 --cpus-per-task=2 on 16 cores: each task's mask has 2.
  CHECK(CoresPerWorker(2, 16, 0, 2) == 2);
}

TEST_CASE("a cgroup CPU quota caps the cores", "[cpu_cores]") {
  CHECK(CoresPerWorker(16, 16, /*quota=*/1.0, 1) == 1);  // docker --cpus=1
  CHECK(CoresPerWorker(16, 16, 2.5, 1) == 3);            // Rounded up.
  CHECK(CoresPerWorker(16, 16, 4.0, 2) == 2);
}

TEST_CASE("this process has at least one core", "[cpu_cores]") {
  CHECK(AvailableCores() >= 1);
  CHECK(CoresPerWorker(1) >= 1);
}

}  // namespace
}  // namespace ringwork
