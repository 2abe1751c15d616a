// NumPy's .npz archives (np.savez, np.savez_compressed: a zip of .npy arrays) as
// a pipeline source: element i holds row i of every array, as
// tf.data.Dataset.from_tensor_slices(dict(np.load(path))) gives it, but read from
// the archive as the pipeline needs rows (libzip; a deflated array is inflated
// as it streams), so memory stays bounded by the buffers, not the arrays.
//
//   RW_ASSIGN_OR_RETURN(Pipeline rows, NpzPipeline({"train.npz"}, {"x", "y"}));
//   // rows.spec(): "x": float32 [28, 28], "y": int64 []
//
// Types: float32, int32, int64, uint8 as stored; float64 becomes float32, bool
// uint8, int8/int16/uint16 int32, uint32 int64. Every array of an archive has the
// same number of rows (its first dimension); several archives (a glob) must hold
// the same arrays with the same row shapes, and the FILE policy gives each worker
// its own archives. An array in Fortran order, big-endian, or of another dtype
// is refused by name; a corrupt archive (a CRC that does not match, a cut file)
// is an error naming the file, the array and the row (with ignore_errors the
// rest of that archive is skipped and counted once).
#ifndef RINGWORK_DATA_PIPELINE_NPZ_SOURCE_H_
#define RINGWORK_DATA_PIPELINE_NPZ_SOURCE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/pipeline/pipeline.h"

namespace ringwork {

struct NpyArray {
  std::string name;    // Its key in the archive ("x" for x.npy).
  std::string dtype;   // NumPy's descr: "<f4", "|u1", ...
  ValueType type;      // What the pipeline gives.
  Shape shape;         // The whole array's; shape[0] is its rows.
  int64_t offset = 0;  // Of its data in its (uncompressed) .npy member.
};

// The arrays of one archive, in the archive's order. INVALID_ARGUMENT naming the
// file and the array for one that cannot be read; NOT_FOUND for a missing file.
absl::StatusOr<std::vector<NpyArray>> DescribeNpz(const std::string& path);

// `select`: the arrays to give, in this order (empty: all, in the first archive's
// order).
absl::StatusOr<Pipeline> NpzPipeline(std::vector<std::string> files,
                                     std::vector<std::string> select = {});

}  // namespace ringwork

#endif  // RINGWORK_DATA_PIPELINE_NPZ_SOURCE_H_
