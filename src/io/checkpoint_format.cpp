#include "io/checkpoint_format.hpp"

#include <algorithm>
#include <cstring>
#include <set>

#include "core/error.hpp"
#include "io/crc32c.hpp"

namespace dpt {

namespace {

constexpr unsigned char kMagic[8] = {'D', 'P', 'T', 'R', 'C', 'K', 'P', 'T'};
constexpr size_t kHeaderSize = kCheckpointHeaderSize;
constexpr size_t kMaxRank = 8;

// Little-endian byte writer.
class Writer {
 public:
  explicit Writer(std::vector<unsigned char> &out) : out_(out) {}
  void u8(uint8_t v) { out_.push_back(v); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) out_.push_back(uint8_t(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(uint8_t(v >> (8 * i)));
  }
  void bytes(const void *p, size_t n) {
    if (n == 0) return;
    const size_t old = out_.size();
    out_.resize(old + n);
    std::memcpy(out_.data() + old, p, n);
  }

 private:
  std::vector<unsigned char> &out_;
};

// Bounds-checked little-endian reader over [bytes, bytes + size).
class Reader {
 public:
  Reader(const unsigned char *bytes, size_t size, std::string what)
      : bytes_(bytes), end_(size), what_(std::move(what)) {}
  uint64_t le(size_t n) {
    DPT_REQUIRE(n <= end_ - pos_, DPT_ERROR_FORMAT, what_ + " ends early");
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t(bytes_[pos_ + i]) << (8 * i);
    pos_ += n;
    return v;
  }
  std::string text(size_t n) {
    DPT_REQUIRE(n <= end_ - pos_, DPT_ERROR_FORMAT, what_ + " ends early");
    std::string s(reinterpret_cast<const char *>(bytes_ + pos_), n);
    pos_ += n;
    return s;
  }
  bool done() const { return pos_ == end_; }

 private:
  const unsigned char *bytes_;
  size_t pos_ = 0, end_;
  std::string what_;
};

uint64_t element_count(const std::vector<uint64_t> &shape) {
  uint64_t n = 1;
  for (uint64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return UINT64_MAX;
  return n;
}

}  // namespace

size_t dtype_size(ElementType dtype) {
  switch (dtype) {
    case ElementType::kF32:
      return 4;
    case ElementType::kU64:
      return 8;
    case ElementType::kF64:
      return 8;
    case ElementType::kU8:
      return 1;
  }
  return 0;
}

// Layout: 64-byte header | table | tensor data, packed back to back in table order, so that every byte of
// the file is covered by the header CRC, the table CRC or one tensor's CRC.
std::vector<unsigned char> encode_checkpoint(const std::vector<Tensor> &tensors) {
  std::vector<unsigned char> table;
  Writer t(table);
  uint64_t data_size = 0;
  for (const Tensor &tensor : tensors) data_size += tensor.bytes.size();
  size_t table_size = 0;
  for (const Tensor &tensor : tensors)
    table_size += 1 + tensor.name.size() + 2 + 8 * tensor.shape.size() + 8 + 8 + 4;
  uint64_t offset = kHeaderSize + table_size;
  for (const Tensor &tensor : tensors) {
    DPT_REQUIRE(!tensor.name.empty() && tensor.name.size() <= 255 && tensor.shape.size() <= kMaxRank,
                DPT_ERROR_INTERNAL, "bad checkpoint tensor " + tensor.name);
    DPT_REQUIRE(element_count(tensor.shape) * dtype_size(tensor.dtype) == tensor.bytes.size(),
                DPT_ERROR_INTERNAL, "checkpoint tensor " + tensor.name + " has the wrong size");
    t.u8(uint8_t(tensor.name.size()));
    t.bytes(tensor.name.data(), tensor.name.size());
    t.u8(uint8_t(tensor.dtype));
    t.u8(uint8_t(tensor.shape.size()));
    for (uint64_t d : tensor.shape) t.u64(d);
    t.u64(offset);
    t.u64(tensor.bytes.size());
    t.u32(crc32c(tensor.bytes.data(), tensor.bytes.size()));
    offset += tensor.bytes.size();
  }
  std::vector<unsigned char> image;
  image.reserve(kHeaderSize + table.size() + data_size);
  Writer h(image);
  h.bytes(kMagic, sizeof kMagic);
  h.u32(kCheckpointFormatVersion);
  h.u32(kHeaderSize);
  h.u64(kHeaderSize + table.size() + data_size);  // file size
  h.u32(uint32_t(tensors.size()));
  h.u32(uint32_t(table.size()));
  h.u64(kHeaderSize);                 // table offset
  h.u64(kHeaderSize + table.size());  // data offset
  h.u32(crc32c(table.data(), table.size()));
  h.u32(0);  // flags
  h.u32(0);  // reserved
  h.u32(crc32c(image.data(), image.size()));
  h.bytes(table.data(), table.size());
  for (const Tensor &tensor : tensors) h.bytes(tensor.bytes.data(), tensor.bytes.size());
  return image;
}

CheckpointHeader decode_checkpoint_header(const unsigned char *bytes, size_t available, uint64_t file_size,
                                          const std::string &path) {
  const std::string where = "checkpoint '" + path + "'";
  DPT_REQUIRE(file_size >= kHeaderSize && available >= kHeaderSize, DPT_ERROR_FORMAT,
              where + " is truncated: " + std::to_string(std::min<uint64_t>(file_size, available)) +
                  " bytes, less than its header");
  DPT_REQUIRE(std::memcmp(bytes, kMagic, sizeof kMagic) == 0, DPT_ERROR_FORMAT,
              where + " is not a dptrain checkpoint (bad magic)");
  Reader h(bytes + sizeof kMagic, kHeaderSize - sizeof kMagic, where + " header");
  const uint32_t version = uint32_t(h.le(4));
  const uint32_t header_size = uint32_t(h.le(4));
  CheckpointHeader header;
  header.file_size = h.le(8);
  header.tensor_count = uint32_t(h.le(4));
  header.table_size = uint32_t(h.le(4));
  const uint64_t table_offset = h.le(8);
  header.data_offset = h.le(8);
  header.table_crc = uint32_t(h.le(4));
  const uint32_t flags = uint32_t(h.le(4));
  const uint32_t reserved = uint32_t(h.le(4));
  const uint32_t header_crc = uint32_t(h.le(4));
  DPT_REQUIRE(crc32c(bytes, kHeaderSize - 4) == header_crc, DPT_ERROR_FORMAT,
              where + " has a corrupt header (CRC mismatch)");
  DPT_REQUIRE(version == kCheckpointFormatVersion, DPT_ERROR_UNSUPPORTED,
              where + " has format version " + std::to_string(version) + "; this library reads version " +
                  std::to_string(kCheckpointFormatVersion));
  DPT_REQUIRE(header_size == kHeaderSize && flags == 0 && reserved == 0 && table_offset == kHeaderSize,
              DPT_ERROR_FORMAT, where + " has an invalid header");
  DPT_REQUIRE(header.file_size == file_size, DPT_ERROR_FORMAT,
              where + " is " + std::to_string(file_size) + " bytes, its header says " +
                  std::to_string(header.file_size) + " (truncated or extended)");
  DPT_REQUIRE(header.data_offset == table_offset + header.table_size && header.data_offset <= file_size,
              DPT_ERROR_FORMAT, where + ": the tensor table does not fit the file");
  return header;
}

std::vector<TensorEntry> decode_checkpoint_table(const unsigned char *table, const CheckpointHeader &header,
                                                 const std::string &path) {
  const std::string where = "checkpoint '" + path + "'";
  DPT_REQUIRE(crc32c(table, header.table_size) == header.table_crc, DPT_ERROR_FORMAT,
              where + " has a corrupt tensor table (CRC mismatch)");
  Reader t(table, header.table_size, where + " tensor table");
  std::vector<TensorEntry> entries;
  std::set<std::string> names;
  const uint64_t file_size = header.file_size;
  uint64_t expected_offset = header.data_offset;  // tensors are packed back to back in table order
  for (uint32_t i = 0; i < header.tensor_count; ++i) {
    TensorEntry entry;
    const size_t name_length = size_t(t.le(1));
    entry.name = t.text(name_length);
    DPT_REQUIRE(name_length > 0 && names.insert(entry.name).second, DPT_ERROR_FORMAT,
                where + ": tensor " + std::to_string(i) + " has an empty or repeated name");
    const uint8_t dtype = uint8_t(t.le(1));
    DPT_REQUIRE(dtype >= 1 && dtype <= 4, DPT_ERROR_FORMAT,
                where + ": tensor '" + entry.name + "' has unknown dtype " + std::to_string(dtype));
    entry.dtype = ElementType(dtype);
    const size_t rank = size_t(t.le(1));
    DPT_REQUIRE(rank <= kMaxRank, DPT_ERROR_FORMAT,
                where + ": tensor '" + entry.name + "' has rank " + std::to_string(rank));
    for (size_t d = 0; d < rank; ++d) entry.shape.push_back(t.le(8));
    entry.offset = t.le(8);
    entry.length = t.le(8);
    entry.crc = uint32_t(t.le(4));
    const uint64_t elements = element_count(entry.shape);
    DPT_REQUIRE(elements != UINT64_MAX && elements <= UINT64_MAX / dtype_size(entry.dtype) &&
                    elements * dtype_size(entry.dtype) == entry.length,
                DPT_ERROR_FORMAT, where + ": tensor '" + entry.name + "' length does not match its shape");
    DPT_REQUIRE(
        entry.offset == expected_offset && entry.length <= file_size - entry.offset, DPT_ERROR_FORMAT,
        where + ": tensor '" + entry.name + "' lies outside its place in the file (bounds or overlap)");
    expected_offset = entry.offset + entry.length;
    entries.push_back(std::move(entry));
  }
  DPT_REQUIRE(t.done(), DPT_ERROR_FORMAT, where + ": the tensor table has trailing bytes");
  DPT_REQUIRE(expected_offset == file_size, DPT_ERROR_FORMAT, where + " has bytes after its last tensor");
  return entries;
}

std::vector<Tensor> decode_checkpoint(const std::vector<unsigned char> &image, const std::string &path) {
  const CheckpointHeader header = decode_checkpoint_header(image.data(), image.size(), image.size(), path);
  const std::vector<TensorEntry> entries = decode_checkpoint_table(image.data() + kHeaderSize, header, path);
  std::vector<Tensor> tensors;
  tensors.reserve(entries.size());
  for (const TensorEntry &entry : entries) {
    DPT_REQUIRE(crc32c(image.data() + entry.offset, entry.length) == entry.crc, DPT_ERROR_FORMAT,
                "checkpoint '" + path + "': tensor '" + entry.name + "' is corrupt (CRC mismatch)");
    Tensor tensor;
    tensor.name = entry.name;
    tensor.dtype = entry.dtype;
    tensor.shape = entry.shape;
    tensor.bytes.assign(image.begin() + std::ptrdiff_t(entry.offset),
                        image.begin() + std::ptrdiff_t(entry.offset + entry.length));
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

}  // namespace dpt
