// A small strict JSON reader and writer for the headers of binary files (safetensors): the reader pulls
// the tokens a schema-aware caller asks for (objects, arrays, strings, non-negative integers) from a text in
// memory and nests nothing itself, so no input can recurse or allocate beyond the strings it holds.
// RFC 8259 syntax: UTF-8 checked (no overlong forms, surrogates or code points above U+10FFFF), escapes
// decoded (\uXXXX, surrogate pairs only in pairs), control characters only escaped, integers without sign,
// fraction, exponent or leading zero and exact up to 2^64 - 1. true, false, null and other numbers are not
// read: the headers have none. Every error is DPT_ERROR_FORMAT "<where>: header byte <i>: <what>".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dpt::json {

class HeaderReader {
 public:
  // text is not copied: it must outlive the reader. where names the file in messages.
  HeaderReader(const char *text, size_t size, std::string where);

  // After optional whitespace: the next character is c, consumed; else an error ("expected ':'").
  void expect(char c);
  // After optional whitespace: consumes c when it comes next.
  bool accept(char c);
  // After optional whitespace: whether c comes next (not consumed).
  bool next_is(char c);
  // After optional whitespace: a string, unescaped (valid UTF-8, may hold U+0000).
  std::string string();
  // After optional whitespace: a non-negative integer.
  uint64_t unsigned_integer();
  // Only whitespace is left.
  void expect_end();
  // Byte offset of the next unread character.
  size_t offset() const { return pos_; }
  [[noreturn]] void fail(const std::string &what) const;

 private:
  void skip_whitespace();
  uint32_t hex4();
  void utf8_sequence(std::string &out);

  const char *text_;
  size_t size_, pos_ = 0;
  std::string where_;
};

// Appends s as a JSON string (quotes, \" \\ \b \f \n \r \t, other control characters as \u00xx; the rest,
// UTF-8 included, as it is).
void append_string(std::string &out, const std::string &s);

// Whether s is valid UTF-8 by the rules above.
bool valid_utf8(const std::string &s);

// s for a one-line message: at most max_bytes of it (then "..."), bytes outside printable ASCII as \xNN.
std::string printable(const std::string &s, size_t max_bytes = 120);

}  // namespace dpt::json
