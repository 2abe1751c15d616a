// The cores this process may run on, and how worker threads are divided over them.
//
//   const int cores = AvailableCores();                     // its CPU affinity: 2
//   const int per_worker = CoresPerWorker(/*workers_on_this_host=*/2);  // 1
#ifndef RINGWORK_BASE_CPU_CORES_H_
#define RINGWORK_BASE_CPU_CORES_H_

namespace ringwork {

// Cores this process may run on (its CPU affinity; at least 1).
int AvailableCores();

// AvailableCores() shared among the workers on this host (at least 1).
int CoresPerWorker(int workers_on_this_host);

}  // namespace ringwork

#endif  // RINGWORK_BASE_CPU_CORES_H_
