#include "base/cpu_cores.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

namespace ringwork {
namespace {

int AffinityCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

int OnlineCores() { return std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN))); }

// Cores allowed by the cgroup's CPU quota; 0 when there is none (or it cannot be read).
double QuotaCores() {
  // cgroup v2: "max 100000" or "<quota> <period>".
  std::ifstream v2("/sys/fs/cgroup/cpu.max");
  std::string quota;
  double period = 0;
  if (v2 >> quota >> period) {
    char* end = nullptr;
    const double q = std::strtod(quota.c_str(), &end);
    if (quota == "max" || end == quota.c_str() || q <= 0 || period <= 0) return 0;
    return q / period;
  }
  // cgroup v1: quota -1 is none.
  std::ifstream v1_quota("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
      v1_period("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  double q = 0;
  if (v1_quota >> q && v1_period >> period && q > 0 && period > 0) return q / period;
  return 0;
}

int Capped(int affinity, double quota) {
  if (quota > 0) affinity = std::min(affinity, static_cast<int>(std::ceil(quota)));
  return std::max(1, affinity);
}

}  // namespace

int AvailableCores() { return Capped(AffinityCores(), QuotaCores()); }

int CoresPerWorker(int affinity, int online, double quota, int workers_on_this_host) {
  const int cores = Capped(affinity, quota);
  // Bound to a subset of the machine: a scheduler gave this worker its cores.
  if (affinity < online) return cores;
  return std::max(1, cores / std::max(1, workers_on_this_host));
}

int CoresPerWorker(int workers_on_this_host) {
  return CoresPerWorker(AffinityCores(), OnlineCores(), QuotaCores(), workers_on_this_host);
}

}  // namespace ringwork
