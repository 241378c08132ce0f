// A small, strict JSON reader (RFC 8259) for model files, and the two writing helpers they need. Untrusted
// input is bounded: its size, nesting depth, number of values, keys per object and length of a number; a
// duplicate key is an error. Every failure is DPT_ERROR_FORMAT with "line L, column C: what".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dpt::json {

struct Limits {
  size_t max_bytes = size_t(4) << 20;
  size_t max_depth = 16;
  size_t max_values = size_t(1) << 19;
  size_t max_members = 256;  // keys of one object
};

struct Member;

struct Value {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  std::string text;             // kString: the decoded text (UTF-8); kNumber: the literal as written
  std::vector<Value> items;     // kArray
  std::vector<Member> members;  // kObject, in document order, keys unique
  size_t line = 0, column = 0;  // where the value starts (1-based)

  // The member named key, or nullptr.
  const Value *find(std::string_view key) const;
  // "a string", "an array", ... for messages.
  const char *kind_name() const;
};

struct Member {
  std::string key;
  Value value;
};

// Parses one JSON text (surrounding white space allowed, nothing else after it).
Value parse(std::string_view text, const Limits &limits = Limits());

// Number values. Each throws DPT_ERROR_FORMAT naming where (what) and the value's line when the value is
// not a number of that kind or is out of its range.
int64_t to_int64(const Value &v, const std::string &what);
double to_double(const Value &v, const std::string &what);

// Writing: a string in quotes with JSON escapes, and a finite double in the shortest form that reads back
// to the same double ("1e-05", "0.1").
void append_string(std::string &out, std::string_view text);
void append_double(std::string &out, double value);

}  // namespace dpt::json
