#include "io/json_header.hpp"

#include <cstdio>

#include "core/error.hpp"

namespace dpt::json {

namespace {

// The length of the well-formed UTF-8 sequence at p (at most available bytes), 0 if there is none there
// (Unicode's table of well-formed byte sequences: no overlong forms, no surrogates, nothing above U+10FFFF).
size_t utf8_length(const unsigned char *p, size_t available) {
  if (available == 0) return 0;
  const unsigned char b = p[0];
  if (b < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (available < n || p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < n; ++i)
    if (p[i] < 0x80 || p[i] > 0xBF) return 0;
  return n;
}

void append_utf8(std::string &out, uint32_t c) {
  if (c < 0x80) {
    out += char(c);
  } else if (c < 0x800) {
    out += char(0xC0 | (c >> 6));
    out += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += char(0xE0 | (c >> 12));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  } else {
    out += char(0xF0 | (c >> 18));
    out += char(0x80 | ((c >> 12) & 0x3F));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  }
}

std::string describe_char(char c) {
  const unsigned char b = static_cast<unsigned char>(c);
  char text[16];
  if (b > 0x20 && b < 0x7F)
    std::snprintf(text, sizeof text, "'%c'", c);
  else
    std::snprintf(text, sizeof text, "byte 0x%02X", unsigned(b));
  return text;
}

}  // namespace

HeaderReader::HeaderReader(const char *text, size_t size, std::string where)
    : text_(text), size_(size), where_(std::move(where)) {}

void HeaderReader::fail(const std::string &what) const {
  throw_error(DPT_ERROR_FORMAT, where_ + ": header byte " + std::to_string(pos_) + ": " + what);
}

void HeaderReader::skip_whitespace() {
  while (pos_ < size_ &&
         (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
    ++pos_;
}

void HeaderReader::expect(char c) {
  skip_whitespace();
  if (pos_ == size_) fail(std::string("expected '") + c + "', found the end of the header");
  if (text_[pos_] != c) fail(std::string("expected '") + c + "', found " + describe_char(text_[pos_]));
  ++pos_;
}

bool HeaderReader::accept(char c) {
  if (!next_is(c)) return false;
  ++pos_;
  return true;
}

bool HeaderReader::next_is(char c) {
  skip_whitespace();
  return pos_ < size_ && text_[pos_] == c;
}

uint32_t HeaderReader::hex4() {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    if (pos_ == size_) fail("the header ends inside a \\u escape");
    const char c = text_[pos_];
    uint32_t digit;
    if (c >= '0' && c <= '9')
      digit = uint32_t(c - '0');
    else if (c >= 'a' && c <= 'f')
      digit = uint32_t(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      digit = uint32_t(c - 'A' + 10);
    else
      fail("a \\u escape needs 4 hex digits, found " + describe_char(c));
    v = v * 16 + digit;
    ++pos_;
  }
  return v;
}

void HeaderReader::utf8_sequence(std::string &out) {
  const size_t n = utf8_length(reinterpret_cast<const unsigned char *>(text_ + pos_), size_ - pos_);
  if (n == 0) fail("a string holds invalid UTF-8");
  out.append(text_ + pos_, n);
  pos_ += n;
}

std::string HeaderReader::string() {
  skip_whitespace();
  if (pos_ == size_ || text_[pos_] != '"')
    fail("expected a string, found " +
         (pos_ == size_ ? std::string("the end of the header") : describe_char(text_[pos_])));
  ++pos_;
  std::string out;
  for (;;) {
    if (pos_ == size_) fail("the header ends inside a string");
    const char c = text_[pos_];
    const unsigned char b = static_cast<unsigned char>(c);
    if (c == '"') {
      ++pos_;
      return out;
    }
    if (b < 0x20) fail("a string holds an unescaped control character (" + describe_char(c) + ")");
    if (b >= 0x80) {
      utf8_sequence(out);
      continue;
    }
    ++pos_;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (pos_ == size_) fail("the header ends inside a string");
    const char e = text_[pos_++];
    switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t code = hex4();
        if (code >= 0xDC00 && code <= 0xDFFF) fail("a \\u escape is a lone low surrogate");
        if (code >= 0xD800 && code <= 0xDBFF) {
          if (size_ - pos_ < 2 || text_[pos_] != '\\' || text_[pos_ + 1] != 'u')
            fail("a \\u escape is a high surrogate without its low surrogate");
          pos_ += 2;
          const uint32_t low = hex4();
          if (low < 0xDC00 || low > 0xDFFF)
            fail("a \\u escape is a high surrogate without its low surrogate");
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        }
        append_utf8(out, code);
        break;
      }
      default:
        --pos_;
        fail("unknown escape \\" + std::string(1, e));
    }
  }
}

uint64_t HeaderReader::unsigned_integer() {
  skip_whitespace();
  if (pos_ < size_ && text_[pos_] == '-') fail("expected a non-negative integer, found a negative number");
  if (pos_ == size_ || text_[pos_] < '0' || text_[pos_] > '9')
    fail("expected a non-negative integer, found " +
         (pos_ == size_ ? std::string("the end of the header") : describe_char(text_[pos_])));
  const size_t start = pos_;
  uint64_t v = 0;
  while (pos_ < size_ && text_[pos_] >= '0' && text_[pos_] <= '9') {
    const uint64_t digit = uint64_t(text_[pos_] - '0');
    if (v > (UINT64_MAX - digit) / 10) fail("an integer exceeds 2^64 - 1");
    v = v * 10 + digit;
    ++pos_;
  }
  if (text_[start] == '0' && pos_ - start > 1) {
    pos_ = start;
    fail("an integer has a leading zero");
  }
  if (pos_ < size_ && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E'))
    fail("expected an integer, found a fraction or an exponent");
  return v;
}

void HeaderReader::expect_end() {
  skip_whitespace();
  if (pos_ != size_) fail(describe_char(text_[pos_]) + " after the end of the header's object");
}

void append_string(std::string &out, const std::string &s) {
  static const char kHex[] = "0123456789abcdef";
  out += '"';
  for (const char c : s) {
    const unsigned char b = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (b < 0x20) {
          out += "\\u00";
          out += kHex[b >> 4];
          out += kHex[b & 0xF];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

bool valid_utf8(const std::string &s) {
  const auto *p = reinterpret_cast<const unsigned char *>(s.data());
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = utf8_length(p + i, s.size() - i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string printable(const std::string &s, size_t max_bytes) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == max_bytes) {
      out += "...";
      break;
    }
    const unsigned char b = static_cast<unsigned char>(s[i]);
    if (b >= 0x20 && b < 0x7F && b != '\\') {
      out += s[i];
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", unsigned(b));
      out += hex;
    }
  }
  return out;
}

}  // namespace dpt::json
