#include "base/crc32c.h"

#include <array>
#include <cstring>

namespace ringwork {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78;  // Castagnoli, reflected.

std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPolynomial : c >> 1;
    table[i] = c;
  }
  return table;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t Crc32cHardware(const uint8_t* p, size_t size,
                                                          uint32_t crc) {
  uint64_t c = ~crc;
  while (size >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = __builtin_ia32_crc32di(c, word);
    p += 8;
    size -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (size-- > 0) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return ~c32;
}

bool HasSse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

uint32_t Crc32cPortable(const void* data, size_t size, uint32_t crc) {
  static const std::array<uint32_t, 256> table = MakeTable();
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  for (size_t i = 0; i < size; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return ~c;
}

uint32_t Crc32c(const void* data, size_t size, uint32_t crc) {
#if defined(__x86_64__)
  if (HasSse42()) return Crc32cHardware(static_cast<const uint8_t*>(data), size, crc);
#endif
  return Crc32cPortable(data, size, crc);
}

}  // namespace ringwork
