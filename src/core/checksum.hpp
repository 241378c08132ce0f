// FNV-1a 64-bit: the parameter checksum that lets two runs be compared bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dpt {

inline uint64_t fnv1a64(const void *data, size_t bytes, uint64_t hash = 0xcbf29ce484222325ULL) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < bytes; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

}  // namespace dpt
