#include "base/cpu_cores.h"

#include <sched.h>

#include <algorithm>

namespace ringwork {

int AvailableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

int CoresPerWorker(int workers_on_this_host) {
  return std::max(1, AvailableCores() / std::max(1, workers_on_this_host));
}

}  // namespace ringwork
