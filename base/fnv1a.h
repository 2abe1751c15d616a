// FNV-1a, 64 bits: a hash that is stable across builds, platforms and library
// versions (std::hash is not), for fingerprints compared between hosts or runs
// and for seeds derived from names. Not for security.
//
//   uint64_t h = Fnv1a64("dense/kernel");
//   h = Fnv1a64(tensor.data(), tensor.size() * sizeof(float), h);   // chained
#ifndef RINGWORK_BASE_FNV1A_H_
#define RINGWORK_BASE_FNV1A_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace ringwork {

inline constexpr uint64_t kFnv1aOffset = 0xcbf29ce484222325ull;

inline uint64_t Fnv1a64(const void* data, size_t size, uint64_t hash = kFnv1aOffset) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ull;
  return hash;
}

inline uint64_t Fnv1a64(absl::string_view text, uint64_t hash = kFnv1aOffset) {
  return Fnv1a64(text.data(), text.size(), hash);
}

}  // namespace ringwork

#endif  // RINGWORK_BASE_FNV1A_H_
