// CRC-32C (Castagnoli), the checksum of every checkpoint tensor and of the checkpoint header.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dpt {

// crc32c("123456789") == 0xE3069283.
uint32_t crc32c(const void *data, size_t bytes, uint32_t crc = 0);

}  // namespace dpt
