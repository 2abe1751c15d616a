// Runs one function per rank on its own thread, for multi-rank tests in one
// process, and returns what each rank returned.
//
//   std::vector<absl::Status> results = RunOnRanks(4, [&](int rank) {
//     return communicators[rank]->Barrier();
//   });
#ifndef RINGWORK_TESTING_RANK_THREADS_H_
#define RINGWORK_TESTING_RANK_THREADS_H_

#include <functional>
#include <thread>
#include <vector>

#include "absl/status/status.h"

namespace ringwork {

inline std::vector<absl::Status> RunOnRanks(int world_size,
                                            const std::function<absl::Status(int rank)>& fn) {
  std::vector<absl::Status> results(world_size);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world_size; ++rank) {
    threads.emplace_back([&, rank] { results[rank] = fn(rank); });
  }
  for (auto& t : threads) t.join();
  return results;
}

}  // namespace ringwork

#endif  // RINGWORK_TESTING_RANK_THREADS_H_
