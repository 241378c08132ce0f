#include "io/safetensors.hpp"

#include <algorithm>
#include <cstring>
#include <set>
#include <tuple>

#include "core/error.hpp"
#include "io/json_header.hpp"

namespace dpt::safetensors {

namespace {

struct DTypeInfo {
  const char *name;
  unsigned bits;
};

// Indexed by DType.
constexpr DTypeInfo kDTypes[] = {
    {"BOOL", 8},    {"F4", 4},      {"F6_E2M3", 6}, {"F6_E3M2", 6},     {"U8", 8},          {"I8", 8},
    {"F8_E5M2", 8}, {"F8_E4M3", 8}, {"F8_E8M0", 8}, {"F8_E4M3FNUZ", 8}, {"F8_E5M2FNUZ", 8}, {"I16", 16},
    {"U16", 16},    {"F16", 16},    {"BF16", 16},   {"I32", 32},        {"U32", 32},        {"F32", 32},
    {"C64", 64},    {"F64", 64},    {"I64", 64},    {"U64", 64},
};
constexpr size_t kDTypeCount = sizeof kDTypes / sizeof kDTypes[0];
static_assert(kDTypeCount == size_t(DType::kU64) + 1, "one entry per DType");

std::string quoted(const std::string &name) {
  std::string q(1, '\'');  // (not "'" + ...: GCC 12 warns falsely on it, -Wrestrict)
  q += json::printable(name);
  q += '\'';
  return q;
}

std::string shape_text(const std::vector<uint64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

// product(shape) x bits / 8, or false when it overflows or is not a whole number of bytes.
bool byte_count(const std::vector<uint64_t> &shape, DType dtype, uint64_t &bytes, std::string &why) {
  uint64_t elements = 1;
  for (uint64_t d : shape)
    if (__builtin_mul_overflow(elements, d, &elements)) {
      why = "its shape " + shape_text(shape) + " has more than 2^64 elements";
      return false;
    }
  uint64_t bits;
  if (__builtin_mul_overflow(elements, uint64_t(dtype_bits(dtype)), &bits)) {
    why = "its size overflows (shape " + shape_text(shape) + ", " + dtype_name(dtype) + ")";
    return false;
  }
  if (bits % 8 != 0) {
    why = "its " + std::to_string(elements) + " " + dtype_name(dtype) + " elements do not fill whole bytes";
    return false;
  }
  bytes = bits / 8;
  return true;
}

// One tensor's {"dtype": ..., "shape": [...], "data_offsets": [b, e]}, each field exactly once.
Entry read_entry(json::HeaderReader &r, std::string name) {
  Entry e;
  e.name = std::move(name);
  bool dtype = false, shape = false, offsets = false;
  const std::string tensor = "tensor " + quoted(e.name);
  r.expect('{');
  if (!r.accept('}')) {
    do {
      const std::string field = r.string();
      r.expect(':');
      const auto once = [&](bool &seen) {
        if (seen) r.fail(tensor + " has field '" + json::printable(field) + "' twice");
        seen = true;
      };
      if (field == "dtype") {
        once(dtype);
        const std::string text = r.string();
        if (!parse_dtype(text, e.dtype))
          r.fail(tensor + " has the unknown dtype '" + json::printable(text) + "'");
      } else if (field == "shape") {
        once(shape);
        r.expect('[');
        if (!r.accept(']')) {
          do e.shape.push_back(r.unsigned_integer());
          while (r.accept(','));
          r.expect(']');
        }
      } else if (field == "data_offsets") {
        once(offsets);
        r.expect('[');
        e.begin = r.unsigned_integer();
        r.expect(',');
        e.end = r.unsigned_integer();
        r.expect(']');
      } else {
        r.fail(tensor + " has the unknown field '" + json::printable(field) +
               "' (expected dtype, shape and data_offsets)");
      }
    } while (r.accept(','));
    r.expect('}');
  }
  if (!dtype || !shape || !offsets)
    r.fail(tensor + " has no " + (!dtype ? "dtype" : !shape ? "shape" : "data_offsets"));
  return e;
}

void read_metadata(json::HeaderReader &r, Header &h) {
  std::set<std::string> keys;
  r.expect('{');
  if (r.accept('}')) return;
  do {
    std::string key = r.string();
    r.expect(':');
    if (!r.next_is('"'))
      r.fail("__metadata__ value of " + quoted(key) + " is not a string (only strings are allowed)");
    std::string value = r.string();
    if (!keys.insert(key).second) r.fail("__metadata__ has the key " + quoted(key) + " twice");
    h.metadata.emplace_back(std::move(key), std::move(value));
  } while (r.accept(','));
  r.expect('}');
}

void put_le64(std::vector<unsigned char> &out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i)));
}

}  // namespace

const char *dtype_name(DType dtype) {
  return size_t(dtype) < kDTypeCount ? kDTypes[size_t(dtype)].name : "?";
}

unsigned dtype_bits(DType dtype) {
  return size_t(dtype) < kDTypeCount ? kDTypes[size_t(dtype)].bits : 0;
}

bool parse_dtype(const std::string &name, DType &dtype) {
  for (size_t i = 0; i < kDTypeCount; ++i)
    if (name == kDTypes[i].name) {
      dtype = DType(i);
      return true;
    }
  return false;
}

bool is_integer(DType dtype) {
  switch (dtype) {
    case DType::kU8:
    case DType::kI8:
    case DType::kI16:
    case DType::kU16:
    case DType::kI32:
    case DType::kU32:
    case DType::kI64:
    case DType::kU64:
      return true;
    default:
      return false;
  }
}

uint64_t decode_header_length(const unsigned char *prefix, uint64_t file_size, const std::string &where) {
  DPT_REQUIRE(file_size >= kPrefixBytes, DPT_ERROR_FORMAT,
              where + " is " + std::to_string(file_size) + " bytes, too short for the 8-byte header length");
  uint64_t n = 0;
  for (size_t i = 0; i < kPrefixBytes; ++i) n |= uint64_t(prefix[i]) << (8 * i);
  DPT_REQUIRE(n <= kMaxHeaderBytes, DPT_ERROR_FORMAT,
              where + ": the header length " + std::to_string(n) + " exceeds the limit of " +
                  std::to_string(kMaxHeaderBytes) + " bytes (not a safetensors file?)");
  DPT_REQUIRE(n <= file_size - kPrefixBytes, DPT_ERROR_FORMAT,
              where + ": the header length " + std::to_string(n) + " exceeds the " +
                  std::to_string(file_size - kPrefixBytes) + " bytes that follow it (truncated?)");
  DPT_REQUIRE(n >= 2, DPT_ERROR_FORMAT,
              where + ": the header length is " + std::to_string(n) + ", too short for a JSON object");
  return n;
}

Header decode_header(const unsigned char *json, size_t json_bytes, uint64_t file_size,
                     const std::string &where) {
  DPT_REQUIRE(file_size >= kPrefixBytes && json_bytes <= file_size - kPrefixBytes, DPT_ERROR_INTERNAL,
              "decode_header: the header length was not checked against the file size");
  Header h;
  h.json_bytes = json_bytes;
  h.data_offset = kPrefixBytes + json_bytes;
  h.data_bytes = file_size - h.data_offset;
  const char *text = reinterpret_cast<const char *>(json);
  DPT_REQUIRE(json_bytes > 0 && text[0] == '{', DPT_ERROR_FORMAT,
              where + ": the header does not begin with '{' (not a safetensors file?)");
  json::HeaderReader r(text, json_bytes, where);
  std::set<std::string> names;
  r.expect('{');
  if (!r.accept('}')) {
    do {
      std::string key = r.string();
      r.expect(':');
      if (!names.insert(key).second) r.fail("the key " + quoted(key) + " appears twice");
      if (key == "__metadata__") {
        h.has_metadata = true;
        read_metadata(r, h);
      } else {
        h.tensors.push_back(read_entry(r, std::move(key)));
      }
    } while (r.accept(','));
    r.expect('}');
  }
  r.expect_end();

  // The data area is covered exactly, in offset order: no holes, no overlaps, nothing after the last.
  std::sort(h.tensors.begin(), h.tensors.end(), [](const Entry &a, const Entry &b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  uint64_t at = 0;
  for (const Entry &e : h.tensors) {
    const std::string tensor = where + ": tensor " + quoted(e.name);
    DPT_REQUIRE(e.begin <= e.end, DPT_ERROR_FORMAT,
                tensor + " has data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                    "] that end before they begin");
    DPT_REQUIRE(e.begin == at, DPT_ERROR_FORMAT,
                tensor + " begins at data offset " + std::to_string(e.begin) + ", expected " +
                    std::to_string(at) +
                    (e.begin < at ? " (it overlaps the tensor before it)" : " (a gap in the data area)"));
    uint64_t bytes = 0;
    std::string why;
    DPT_REQUIRE(byte_count(e.shape, e.dtype, bytes, why), DPT_ERROR_FORMAT, tensor + ": " + why);
    DPT_REQUIRE(e.bytes() == bytes, DPT_ERROR_FORMAT,
                tensor + " has " + std::to_string(e.bytes()) + " bytes of data, its shape " +
                    shape_text(e.shape) + " of " + dtype_name(e.dtype) + " needs " + std::to_string(bytes));
    DPT_REQUIRE(e.end <= h.data_bytes, DPT_ERROR_FORMAT,
                tensor + " ends at data offset " + std::to_string(e.end) + ", beyond the " +
                    std::to_string(h.data_bytes) + " bytes of the data area (truncated?)");
    at = e.end;
  }
  DPT_REQUIRE(at == h.data_bytes, DPT_ERROR_FORMAT,
              where + ": the tensors cover " + std::to_string(at) + " bytes of the data area, which has " +
                  std::to_string(h.data_bytes) + " (bytes that belong to no tensor)");
  return h;
}

Header decode(const unsigned char *image, size_t size, const std::string &where) {
  const uint64_t n = decode_header_length(image, size, where);
  return decode_header(image + kPrefixBytes, size_t(n), size, where);
}

std::vector<unsigned char> encode(const std::vector<TensorView> &tensors,
                                  const std::vector<std::pair<std::string, std::string>> &metadata) {
  std::set<std::string> names, keys;
  for (const TensorView &t : tensors) {
    DPT_REQUIRE(t.name != "__metadata__", DPT_ERROR_INVALID_ARGUMENT,
                "a tensor cannot be named '__metadata__' in a safetensors file");
    DPT_REQUIRE(json::valid_utf8(t.name), DPT_ERROR_INVALID_ARGUMENT,
                "the tensor name " + quoted(t.name) + " is not valid UTF-8");
    DPT_REQUIRE(names.insert(t.name).second, DPT_ERROR_INVALID_ARGUMENT,
                "two tensors are named " + quoted(t.name));
    uint64_t bytes = 0;
    std::string why;
    DPT_REQUIRE(byte_count(t.shape, t.dtype, bytes, why) && bytes == t.bytes, DPT_ERROR_INVALID_ARGUMENT,
                "tensor " + quoted(t.name) + " has " + std::to_string(t.bytes) + " bytes for its shape " +
                    shape_text(t.shape) + " of " + dtype_name(t.dtype));
    DPT_REQUIRE(t.data != nullptr || t.bytes == 0, DPT_ERROR_INTERNAL,
                "tensor " + quoted(t.name) + " has no data");
  }
  for (const auto &[key, value] : metadata) {
    DPT_REQUIRE(json::valid_utf8(key) && json::valid_utf8(value), DPT_ERROR_INVALID_ARGUMENT,
                "the metadata " + quoted(key) + " is not valid UTF-8");
    DPT_REQUIRE(keys.insert(key).second, DPT_ERROR_INVALID_ARGUMENT,
                "the metadata key " + quoted(key) + " is given twice");
  }
  // The reference writer's order: dtypes of larger alignment first, then by name.
  std::vector<const TensorView *> order;
  for (const TensorView &t : tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const TensorView *a, const TensorView *b) {
    if (a->dtype != b->dtype) return a->dtype > b->dtype;
    return a->name < b->name;
  });

  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    for (size_t i = 0; i < metadata.size(); ++i) {
      if (i != 0) header += ',';
      json::append_string(header, metadata[i].first);
      header += ':';
      json::append_string(header, metadata[i].second);
    }
    header += '}';
  }
  uint64_t offset = 0;
  for (const TensorView *t : order) {
    if (header.size() > 1) header += ',';
    json::append_string(header, t->name);
    header += ":{\"dtype\":\"";
    header += dtype_name(t->dtype);
    header += "\",\"shape\":[";
    for (size_t i = 0; i < t->shape.size(); ++i) {
      if (i != 0) header += ',';
      header += std::to_string(t->shape[i]);
    }
    header +=
        "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + t->bytes) + "]}";
    offset += t->bytes;
  }
  header += '}';
  header.resize((header.size() + 7) / 8 * 8, ' ');
  DPT_REQUIRE(header.size() <= kMaxHeaderBytes, DPT_ERROR_INVALID_ARGUMENT,
              "the safetensors header would have " + std::to_string(header.size()) +
                  " bytes, more than the limit of " + std::to_string(kMaxHeaderBytes));

  std::vector<unsigned char> out;
  out.reserve(kPrefixBytes + header.size() + size_t(offset));
  put_le64(out, header.size());
  out.insert(out.end(), header.begin(), header.end());
  for (const TensorView *t : order) {
    const auto *p = static_cast<const unsigned char *>(t->data);
    if (t->bytes != 0) out.insert(out.end(), p, p + t->bytes);
  }
  return out;
}

}  // namespace dpt::safetensors
