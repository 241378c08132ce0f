// The safetensors container (Hugging Face's format, as safetensors.torch writes and reads it): an 8-byte
// little-endian header length N, N bytes of a JSON object (name -> {"dtype", "shape", "data_offsets"},
// optionally "__metadata__": a string -> string map), padded with spaces, then the tensors' bytes. Encoding
// and strict decoding only; what the tensors mean is trainer_safetensors.hpp's business. The format and the
// checks: docs/safetensors.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dpt::safetensors {

// The dtypes of the format, in the order of its reference implementation (the writer puts the tensors
// of the later dtypes first). F4 and F6 are sub-byte types: a tensor of them must fill whole bytes.
enum class DType : uint8_t {
  kBool,
  kF4,
  kF6E2M3,
  kF6E3M2,
  kU8,
  kI8,
  kF8E5M2,
  kF8E4M3,
  kF8E8M0,
  kF8E4M3Fnuz,
  kF8E5M2Fnuz,
  kI16,
  kU16,
  kF16,
  kBF16,
  kI32,
  kU32,
  kF32,
  kC64,
  kF64,
  kI64,
  kU64,
};

const char *dtype_name(DType dtype);  // "F32"
unsigned dtype_bits(DType dtype);     // 32
// The dtype of a name of the format; false for an unknown name.
bool parse_dtype(const std::string &name, DType &dtype);
bool is_integer(DType dtype);  // U8 ... U64, I8 ... I64

constexpr size_t kPrefixBytes = 8;
// The longest header accepted, as in the reference implementation (a larger one is refused unread).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// A checked entry of the header: where a tensor's bytes lie, not the bytes.
struct Entry {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<uint64_t> shape;  // [] for a scalar
  uint64_t begin = 0, end = 0;  // data_offsets: from the first byte after the header, end exclusive
  uint64_t bytes() const { return end - begin; }
};

struct Header {
  uint64_t json_bytes = 0;   // N
  uint64_t data_offset = 0;  // 8 + N: where the data area begins in the file
  uint64_t data_bytes = 0;   // the data area, the rest of the file
  bool has_metadata = false;
  std::vector<std::pair<std::string, std::string>> metadata;  // in file order
  std::vector<Entry> tensors;                                 // in data order (by data_offsets)
};

// Decoding in two steps, so that a loader reads (and allocates) nothing that the first step has not bounded.
// Every error is DPT_ERROR_FORMAT "<where>: ..." naming what is wrong.
// 1. The header length N from the first 8 bytes of a file of file_size bytes: N <= kMaxHeaderBytes and
//    8 + N <= file_size.
uint64_t decode_header_length(const unsigned char *prefix, uint64_t file_size, const std::string &where);
// 2. The N bytes of the header: it begins with '{'; the JSON (strict, see json_header.hpp) is one object
//    whose keys are unique; "__metadata__", if there, maps strings to strings; every other key is a
//    tensor of exactly the fields dtype (a known name), shape (non-negative integers) and data_offsets
//    ([begin, end], begin <= end); only whitespace follows the object. The tensors, by offset, fill the
//    data area of file_size - 8 - N bytes exactly: the first begins at 0, each begins where the one before
//    ends, the last ends at the end of the file, and each holds product(shape) x dtype size bytes (all
//    overflow-checked).
Header decode_header(const unsigned char *json, size_t json_bytes, uint64_t file_size,
                     const std::string &where);
// Both steps on a whole file image (the data area is then image + header.data_offset).
Header decode(const unsigned char *image, size_t size, const std::string &where);

// A tensor to write: bytes holds product(shape) x dtype size bytes, little-endian.
struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<uint64_t> shape;
  const void *data = nullptr;
  size_t bytes = 0;
};

// One file image, laid out as the reference writer lays it out: the tensors sorted by dtype (the last of
// DType first) then by name, packed without gaps; the header "{"__metadata__":{...},"name":{"dtype":...,
// "shape":[...],"data_offsets":[b,e]},...}" without spaces, padded with spaces to a multiple of 8 bytes so
// that the data begin 8-aligned. Metadata are written in the order given (nothing when there are none).
// DPT_ERROR_INVALID_ARGUMENT for a name given twice, the name "__metadata__", a name or a metadata text
// that is not UTF-8, or a byte count that does not match the shape.
std::vector<unsigned char> encode(const std::vector<TensorView> &tensors,
                                  const std::vector<std::pair<std::string, std::string>> &metadata);

}  // namespace dpt::safetensors
