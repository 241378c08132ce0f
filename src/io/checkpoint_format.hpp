// The checkpoint container: a header, a table of named tensors, and their data, every part checksummed
// (CRC-32C). Encoding and strict decoding only; what the tensors mean is checkpoint.hpp's business.
// The format is specified in docs/checkpoint-format.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dpt {

enum class DType : uint8_t { kF32 = 1, kU64 = 2, kU8 = 3, kF64 = 4 };

struct Tensor {
  std::string name;
  DType dtype = DType::kU8;
  std::vector<uint64_t> shape;
  std::vector<unsigned char> bytes;  // little-endian elements
};

constexpr uint32_t kCheckpointFormatVersion = 1;

// Serialises tensors (names unique, at most 255 bytes) into one checkpoint file image.
std::vector<unsigned char> encode_checkpoint(const std::vector<Tensor> &tensors);

// Parses and validates a file image: magic, version, header and table CRCs, every offset, length, dtype,
// shape and tensor CRC, no overlaps. Throws DPT_ERROR_FORMAT naming what is wrong.
std::vector<Tensor> decode_checkpoint(const std::vector<unsigned char> &image, const std::string &path);

size_t dtype_size(DType dtype);

}  // namespace dpt
