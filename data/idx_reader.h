// Reads the IDX files of MNIST and Fashion-MNIST, gzipped or not:
//   images (magic 0x00000803): uint8 [count, rows, cols] -> float32 [count, rows, cols, 1]
//                              scaled to [0, 1]
//   labels (magic 0x00000801): uint8 [count] -> int32
// Every header is checked against the file's real length before anything is
// allocated from it; errors name the file and the field (exit code 2).
#ifndef RINGWORK_DATA_IDX_READER_H_
#define RINGWORK_DATA_IDX_READER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tensor/tensor.h"

namespace ringwork {

// The whole file, decompressed if it is gzip (at most `max_bytes`).
absl::StatusOr<std::string> ReadMaybeGzipped(const std::string& path,
                                             size_t max_bytes = size_t{1} << 31);

absl::StatusOr<Tensor> ReadIdxImages(const std::string& path);
absl::StatusOr<std::vector<int32_t>> ReadIdxLabels(const std::string& path);

}  // namespace ringwork

#endif  // RINGWORK_DATA_IDX_READER_H_
