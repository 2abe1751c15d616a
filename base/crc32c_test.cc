#include "base/crc32c.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace ringwork {
namespace {

TEST_CASE("CRC-32C of the standard check string", "[crc32c]") {
  CHECK(Crc32c("123456789", 9) == 0xE3069283u);
  CHECK(Crc32cPortable("123456789", 9) == 0xE3069283u);
  CHECK(Crc32c("", 0) == 0u);
  // 32 zero bytes (RFC 3720, B.4).
  const std::vector<uint8_t> zeros(32, 0);
  CHECK(Crc32c(zeros.data(), zeros.size()) == 0x8A9136AAu);
}

TEST_CASE("hardware and table versions agree; continuation equals one pass", "[crc32c]") {
  std::mt19937 rng(7);
  std::vector<uint8_t> data(10000);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  for (size_t offset : {0, 1, 3, 7}) {
    for (size_t size : {0, 1, 7, 8, 9, 63, 64, 1000, 9000}) {
      INFO("offset " << offset << " size " << size);
      const uint32_t a = Crc32c(data.data() + offset, size);
      CHECK(a == Crc32cPortable(data.data() + offset, size));
      const size_t half = size / 2;
      CHECK(Crc32c(data.data() + offset + half, size - half, Crc32c(data.data() + offset, half)) ==
            a);
    }
  }
}

}  // namespace
}  // namespace ringwork
