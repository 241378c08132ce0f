// The checkpoint container: a header, a table of named tensors, and their data, every part checksummed
// (CRC-32C). Encoding and strict decoding only; what the tensors mean is checkpoint.hpp's business.
// The format is specified in docs/checkpoint-format.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dpt {

enum class ElementType : uint8_t { kF32 = 1, kU64 = 2, kU8 = 3, kF64 = 4 };

struct Tensor {
  std::string name;
  ElementType dtype = ElementType::kU8;
  std::vector<uint64_t> shape;
  std::vector<unsigned char> bytes;  // little-endian elements
};

constexpr uint32_t kCheckpointFormatVersion = 1;
constexpr size_t kCheckpointHeaderSize = 64;

// What a checked header declares.
struct CheckpointHeader {
  uint64_t file_size = 0;
  uint32_t tensor_count = 0;
  uint32_t table_size = 0;
  uint64_t data_offset = 0;  // kCheckpointHeaderSize + table_size: where the table ends and the data begin
  uint32_t table_crc = 0;
};

// A checked entry of the tensor table: where a tensor's data lie, not the data.
struct TensorEntry {
  std::string name;
  ElementType dtype = ElementType::kU8;
  std::vector<uint64_t> shape;
  uint64_t offset = 0, length = 0;
  uint32_t crc = 0;
};

// Serialises tensors (names unique, at most 255 bytes) into one checkpoint file image.
std::vector<unsigned char> encode_checkpoint(const std::vector<Tensor> &tensors);

// The checks of decode_checkpoint in three steps, so that a loader can refuse a file from its first bytes
// before reading (or allocating) the rest of it. Each throws DPT_ERROR_FORMAT (a newer format version:
// DPT_ERROR_UNSUPPORTED) naming what is wrong.
// 1. The header, from the first `available` bytes of a file of file_size bytes (all of it, or at least
//    kCheckpointHeaderSize): size, magic, header CRC, version, fixed fields, the declared file size against
//    file_size, the table's bounds.
CheckpointHeader decode_checkpoint_header(const unsigned char *bytes, size_t available, uint64_t file_size,
                                          const std::string &path);
// 2. The tensor table (header.table_size bytes from the table offset): its CRC, every entry (name, dtype,
//    rank, shape against length, its place in the packed layout), no trailing table bytes, the last tensor
//    ending at the file size.
std::vector<TensorEntry> decode_checkpoint_table(const unsigned char *table, const CheckpointHeader &header,
                                                 const std::string &path);
// 3. Everything, on a whole file image: steps 1 and 2, then every tensor's CRC.
std::vector<Tensor> decode_checkpoint(const std::vector<unsigned char> &image, const std::string &path);

size_t dtype_size(ElementType dtype);

}  // namespace dpt
