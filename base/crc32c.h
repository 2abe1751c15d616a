// CRC-32C (Castagnoli), the checksum of every tensor and manifest in a checkpoint
// (as in TensorFlow's and LevelDB's formats). Uses the SSE4.2 instruction when the
// CPU has it, a table otherwise; both give the same values.
//
//   uint32_t crc = Crc32c(data, size);
//   crc = Crc32c(more, more_size, crc);   // continues over concatenated data
//   Crc32c("123456789", 9) == 0xE3069283
#ifndef RINGWORK_BASE_CRC32C_H_
#define RINGWORK_BASE_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace ringwork {

uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);

// The table version, for tests that compare it with the hardware one.
uint32_t Crc32cPortable(const void* data, size_t size, uint32_t crc = 0);

}  // namespace ringwork

#endif  // RINGWORK_BASE_CRC32C_H_
