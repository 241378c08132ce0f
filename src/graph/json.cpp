#include "graph/json.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <system_error>

#include "core/error.hpp"

namespace dpt::json {

namespace {

constexpr size_t kMaxNumberLength = 64;

std::string where(size_t line, size_t column) {
  return "line " + std::to_string(line) + ", column " + std::to_string(column) + ": ";
}

class Parser {
 public:
  Parser(std::string_view text, const Limits &limits) : s_(text), limits_(limits) {}

  Value document() {
    if (s_.size() > limits_.max_bytes)
      throw_error(DPT_ERROR_FORMAT, "the text has " + std::to_string(s_.size()) + " bytes, more than the " +
                                        std::to_string(limits_.max_bytes) + " accepted");
    skip_space();
    Value v = value(1);
    skip_space();
    if (pos_ < s_.size()) fail("unexpected " + next_text() + " after the end of the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string &what) const {
    throw_error(DPT_ERROR_FORMAT, where(line_, pos_ - line_start_ + 1) + what);
  }

  bool at_end() const { return pos_ >= s_.size(); }
  unsigned char peek() const { return static_cast<unsigned char>(s_[pos_]); }

  // What is at the current position, for messages.
  std::string next_text() const {
    if (at_end()) return "end of text";
    const unsigned char c = peek();
    if (c >= 0x20 && c < 0x7f) return std::string("'") + char(c) + "'";
    char hex[16];
    std::snprintf(hex, sizeof hex, "byte 0x%02x", c);
    return hex;
  }

  void skip_space() {
    while (!at_end()) {
      const unsigned char c = peek();
      if (c == '\n') {
        ++line_;
        line_start_ = pos_ + 1;
      } else if (c != ' ' && c != '\t' && c != '\r') {
        return;
      }
      ++pos_;
    }
  }

  void expect(char c, const char *what) {
    if (at_end() || peek() != static_cast<unsigned char>(c))
      fail(std::string("expected ") + what + ", got " + next_text());
    ++pos_;
  }

  Value value(size_t depth) {
    if (depth > limits_.max_depth)
      fail("values nested more than " + std::to_string(limits_.max_depth) + " deep");
    if (++values_ > limits_.max_values) fail("more than " + std::to_string(limits_.max_values) + " values");
    Value v;
    v.line = line_;
    v.column = pos_ - line_start_ + 1;
    if (at_end()) fail("expected a value, got end of text");
    const unsigned char c = peek();
    if (c == '{') {
      object(v, depth);
    } else if (c == '[') {
      array(v, depth);
    } else if (c == '"') {
      v.kind = Value::Kind::kString;
      v.text = string();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = Value::Kind::kNumber;
      v.text = number();
    } else if (literal("true")) {
      v.kind = Value::Kind::kBool;
      v.boolean = true;
    } else if (literal("false")) {
      v.kind = Value::Kind::kBool;
    } else if (!literal("null")) {
      fail("expected a value, got " + next_text());
    }
    return v;
  }

  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  void object(Value &v, size_t depth) {
    v.kind = Value::Kind::kObject;
    ++pos_;
    skip_space();
    if (!at_end() && peek() == '}') {
      ++pos_;
      return;
    }
    for (;;) {
      skip_space();
      if (at_end() || peek() != '"') fail("expected a key in double quotes, got " + next_text());
      const size_t key_line = line_, key_column = pos_ - line_start_ + 1;
      std::string key = string();
      for (const Member &m : v.members) {
        if (m.key != key) continue;
        std::string quoted;
        append_string(quoted, key.substr(0, 64));
        throw_error(DPT_ERROR_FORMAT, where(key_line, key_column) + "duplicate key " + quoted);
      }
      if (v.members.size() == limits_.max_members)
        fail("an object with more than " + std::to_string(limits_.max_members) + " keys");
      skip_space();
      expect(':', "':' after the key");
      skip_space();
      Value member = value(depth + 1);
      v.members.push_back(Member{std::move(key), std::move(member)});
      skip_space();
      if (!at_end() && peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}', "',' or '}' in the object");
      return;
    }
  }

  void array(Value &v, size_t depth) {
    v.kind = Value::Kind::kArray;
    ++pos_;
    skip_space();
    if (!at_end() && peek() == ']') {
      ++pos_;
      return;
    }
    for (;;) {
      skip_space();
      v.items.push_back(value(depth + 1));
      skip_space();
      if (!at_end() && peek() == ',') {
        ++pos_;
        continue;
      }
      expect(']', "',' or ']' in the array");
      return;
    }
  }

  unsigned hex4() {
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      if (at_end()) fail("unterminated \\u escape");
      const unsigned char c = peek();
      unsigned digit;
      if (c >= '0' && c <= '9')
        digit = c - '0';
      else if (c >= 'a' && c <= 'f')
        digit = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        digit = c - 'A' + 10;
      else
        fail("expected 4 hexadecimal digits after \\u, got " + next_text());
      code = code * 16 + digit;
      ++pos_;
    }
    return code;
  }

  static void append_utf8(std::string &out, unsigned code) {
    if (code < 0x80) {
      out += char(code);
    } else if (code < 0x800) {
      out += char(0xc0 | (code >> 6));
      out += char(0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
      out += char(0xe0 | (code >> 12));
      out += char(0x80 | ((code >> 6) & 0x3f));
      out += char(0x80 | (code & 0x3f));
    } else {
      out += char(0xf0 | (code >> 18));
      out += char(0x80 | ((code >> 12) & 0x3f));
      out += char(0x80 | ((code >> 6) & 0x3f));
      out += char(0x80 | (code & 0x3f));
    }
  }

  void escape(std::string &out) {
    if (at_end()) fail("unterminated string");
    const unsigned char c = peek();
    ++pos_;
    switch (c) {
      case '"':
      case '\\':
      case '/':
        out += char(c);
        return;
      case 'b':
        out += '\b';
        return;
      case 'f':
        out += '\f';
        return;
      case 'n':
        out += '\n';
        return;
      case 'r':
        out += '\r';
        return;
      case 't':
        out += '\t';
        return;
      case 'u':
        break;
      default:
        --pos_;
        fail("unknown escape \\" + next_text());
    }
    unsigned code = hex4();
    if (code >= 0xdc00 && code <= 0xdfff) fail("a \\u escape of a lone low surrogate");
    if (code >= 0xd800 && code <= 0xdbff) {
      if (!literal("\\u")) fail("a high surrogate without its low surrogate");
      const unsigned low = hex4();
      if (low < 0xdc00 || low > 0xdfff) fail("a high surrogate without its low surrogate");
      code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
    }
    if (code == 0) fail("\\u0000 (a NUL character) in a string");
    append_utf8(out, code);
  }

  std::string string() {
    std::string out;
    ++pos_;  // the opening quote
    for (;;) {
      if (at_end()) fail("unterminated string");
      const unsigned char c = peek();
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) fail("a control character in a string (write it as an escape)");
      ++pos_;
      if (c == '\\')
        escape(out);
      else
        out += char(c);
    }
  }

  void digits() {
    if (at_end() || peek() < '0' || peek() > '9') fail("expected a digit in the number, got " + next_text());
    while (!at_end() && peek() >= '0' && peek() <= '9') ++pos_;
  }

  std::string number() {
    const size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (!at_end() && peek() == '0')
      ++pos_;
    else
      digits();
    if (!at_end() && peek() == '.') {
      ++pos_;
      digits();
    }
    if (!at_end() && (peek() == 'e' || peek() == 'E')) {
      ++pos_;
      if (!at_end() && (peek() == '+' || peek() == '-')) ++pos_;
      digits();
    }
    if (pos_ - start > kMaxNumberLength)
      fail("a number longer than " + std::to_string(kMaxNumberLength) + " characters");
    return std::string(s_.substr(start, pos_ - start));
  }

  std::string_view s_;
  const Limits &limits_;
  size_t pos_ = 0, line_ = 1, line_start_ = 0, values_ = 0;
};

[[noreturn]] void fail_value(const Value &v, const std::string &what, const std::string &problem) {
  throw_error(DPT_ERROR_FORMAT, where(v.line, v.column) + what + ": " + problem);
}

}  // namespace

const Value *Value::find(std::string_view key) const {
  for (const Member &m : members)
    if (m.key == key) return &m.value;
  return nullptr;
}

const char *Value::kind_name() const {
  switch (kind) {
    case Kind::kNull:
      return "null";
    case Kind::kBool:
      return "a boolean";
    case Kind::kNumber:
      return "a number";
    case Kind::kString:
      return "a string";
    case Kind::kArray:
      return "an array";
    case Kind::kObject:
      return "an object";
  }
  return "a value";
}

Value parse(std::string_view text, const Limits &limits) {
  return Parser(text, limits).document();
}

int64_t to_int64(const Value &v, const std::string &what) {
  if (v.kind != Value::Kind::kNumber)
    fail_value(v, what, std::string("expected an integer, got ") + v.kind_name());
  if (v.text.find_first_of(".eE") != std::string::npos)
    fail_value(v, what, "expected an integer, got " + v.text);
  int64_t out = 0;
  const char *first = v.text.data(), *last = first + v.text.size();
  const auto [end, error] = std::from_chars(first, last, out);
  if (error == std::errc::result_out_of_range) fail_value(v, what, v.text + " is out of range");
  if (error != std::errc() || end != last) fail_value(v, what, "expected an integer, got " + v.text);
  return out;
}

double to_double(const Value &v, const std::string &what) {
  if (v.kind != Value::Kind::kNumber)
    fail_value(v, what, std::string("expected a number, got ") + v.kind_name());
  double out = 0;
  const char *first = v.text.data(), *last = first + v.text.size();
  const auto [end, error] = std::from_chars(first, last, out);
  if (error == std::errc::result_out_of_range || (error == std::errc() && !std::isfinite(out)))
    fail_value(v, what, v.text + " is out of the range of a double");
  if (error != std::errc() || end != last) fail_value(v, what, "expected a number, got " + v.text);
  return out;
}

void append_string(std::string &out, std::string_view text) {
  out += '"';
  for (const char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\u%04x", c);
      out += hex;
    } else {
      out += ch;
    }
  }
  out += '"';
}

void append_double(std::string &out, double value) {
  DPT_REQUIRE(std::isfinite(value), DPT_ERROR_INTERNAL, "a model attribute is not finite");
  char text[64];
  const auto [end, error] = std::to_chars(text, text + sizeof text, value);
  DPT_REQUIRE(error == std::errc(), DPT_ERROR_INTERNAL, "cannot format a double");
  out.append(text, end);
}

}  // namespace dpt::json
