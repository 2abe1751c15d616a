#include "strategy/replica_check.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/fnv1a.h"
#include "base/status_macros.h"

namespace ringwork {

absl::Status CheckReplicasIdentical(MultiWorkerMirroredStrategy* strategy,
                                    const std::vector<Variable*>& variables,
                                    absl::string_view when) {
  if (strategy->num_replicas_in_sync() == 1 || variables.empty()) return absl::OkStatus();
  const size_t n = variables.size();
  // [hash...] then [~hash...]: the MIN of ~h is ~(MAX of h).
  std::vector<int64_t> ends(2 * n);
  std::vector<uint64_t> mine(n);
  for (size_t i = 0; i < n; ++i) {
    const Tensor& value = variables[i]->value;
    mine[i] = Fnv1a64(value.data(), sizeof(float) * static_cast<size_t>(value.size()));
    ends[i] = static_cast<int64_t>(mine[i]);
    ends[n + i] = ~static_cast<int64_t>(mine[i]);
  }
  RW_RETURN_IF_ERROR(strategy->communicator()->AllReduce(ends.data(), ends.size(), DataType::kInt64,
                                                         ReduceOp::kMin));
  for (size_t i = 0; i < n; ++i) {
    const uint64_t low = static_cast<uint64_t>(ends[i]);
    const uint64_t high = static_cast<uint64_t>(~ends[n + i]);
    if (low != high) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "the replicas differ %s: variable %s holds other values on some workers (its "
          "fingerprint here, on %s, is %016x; over the workers from %016x to %016x). They "
          "started equal and applied the same averaged gradients, so a host computes "
          "differently (another build or CPU flags?) or memory was corrupted; stopping "
          "rather than training apart (--replica_check_steps)",
          when, variables[i]->name, strategy->cluster().DescribeRank(strategy->rank()), mine[i],
          low, high));
    }
  }
  return absl::OkStatus();
}

}  // namespace ringwork
