// Inputs with known results for every collective, so tests and benchmarks can check
// every element of every result. Contributions are small integers, so sums,
// products and means are exact in every dtype (bfloat16 included) and the expected
// bits are unique.
//
//   FillContribution(DataType::kFloat32, ReduceOp::kSum, buf, n, rank);
//   comm.AllReduce(buf, n, DataType::kFloat32, ReduceOp::kSum);
//   std::vector<uint8_t> want = ExpectedAllReduce(DataType::kFloat32, ReduceOp::kSum, n, p);
//   size_t wrong = CountWrong(DataType::kFloat32, buf, want.data(), n);
#ifndef RINGWORK_RUNTIME_COLLECTIVES_EXPECTATIONS_H_
#define RINGWORK_RUNTIME_COLLECTIVES_EXPECTATIONS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/reduce.h"

namespace ringwork {

// The value rank `rank` contributes at element `index` for `op`.
int64_t Contribution(ReduceOp op, int rank, size_t index);

// Writes Contribution(op, rank, first_index + i) for i < count as `dtype`.
void FillContribution(DataType dtype, ReduceOp op, void* data, size_t count, int rank,
                      size_t first_index = 0);

// Expected results, as bytes of `dtype`.
std::vector<uint8_t> ExpectedAllReduce(DataType dtype, ReduceOp op, size_t count, int world_size,
                                       size_t first_index = 0);
std::vector<uint8_t> ExpectedAllGather(DataType dtype, size_t count, int world_size);

// Elements of `got` whose bytes differ from `expected`.
size_t CountWrong(DataType dtype, const void* got, const void* expected, size_t count);

}  // namespace ringwork

#endif  // RINGWORK_RUNTIME_COLLECTIVES_EXPECTATIONS_H_
