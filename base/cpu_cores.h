// The cores this process may run on, and how worker threads are divided over them.
//
//   const int cores = AvailableCores();                     // e.g. 2
//   const int per_worker = CoresPerWorker(/*workers_on_this_host=*/2);  // 1
//
// A process bound to fewer CPUs than the machine has (Slurm's --cpu-bind, taskset,
// a Kubernetes static CPU policy) was already given its share: it is not divided
// again among the host's workers. A cgroup CPU quota (docker --cpus, Kubernetes
// limits.cpu) caps the count.
#ifndef RINGWORK_BASE_CPU_CORES_H_
#define RINGWORK_BASE_CPU_CORES_H_

namespace ringwork {

// Cores this process may run on: its CPU affinity, capped by its cgroup's CPU quota
// (rounded up); at least 1.
int AvailableCores();

// This worker's share of the host's cores (at least 1).
int CoresPerWorker(int workers_on_this_host);

// The rule itself, for tests: `affinity` CPUs in this process's mask out of `online`,
// `quota` cores allowed by the cgroup (0: no quota).
int CoresPerWorker(int affinity, int online, double quota, int workers_on_this_host);

}  // namespace ringwork

#endif  // RINGWORK_BASE_CPU_CORES_H_
