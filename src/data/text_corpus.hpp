// Byte-level text for language models: the bytes of UTF-8 text files (vocabulary 256, one token a byte), the
// training windows cut from them, and the token datasets they make (dpt_dataset_load_text). Deterministic
// and checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.hpp"

namespace dpt {

struct TextCorpus {
  std::vector<uint8_t> bytes;      // the files' bytes, joined in the order of files
  std::vector<std::string> files;  // the files read (paths)
  size_t skipped = 0;              // files of a directory that are not UTF-8 text
  std::string first_skipped;       // the first of them and why ("x.dat: a NUL byte at offset 12")
};

// path: a UTF-8 text file, or a directory whose regular files (not following symbolic links, no "."
// files, in bytewise name order) are read, each that is UTF-8 text without NUL bytes; the others
// (binary indexes such as fortune's .dat files) are skipped and counted. Errors (DPT_ERROR_FORMAT, one line
// naming the file): a file given by name that is not UTF-8 text (with the offset of the first bad byte),
// no text at all (an empty file, a directory without text files), more than max_bytes in all;
// DPT_ERROR_IO: a path that cannot be read.
TextCorpus load_text_corpus(const std::string &path, uint64_t max_bytes = uint64_t(1) << 31);

// The offset of the first byte of data that makes it not UTF-8 text (a NUL, an invalid or overlong
// sequence, a surrogate, a code point above U+10FFFF, a truncated sequence), or size when it is text.
size_t first_non_text_byte(const uint8_t *data, size_t size);

// Windows of context + 1 tokens from bytes[begin, end): window i holds tokens begin + i * context ..
// begin + (i + 1) * context inclusive, its inputs the first context of them and its targets the last
// context (the inputs shifted by one). Consecutive windows share one token, so every byte but the last
// is a target once.
class TokenWindows {
 public:
  TokenWindows(const std::vector<uint8_t> *bytes, size_t begin, size_t end, size_t context);
  size_t size() const { return count_; }
  size_t context() const { return context_; }
  // Window i's inputs and targets (context tokens each).
  void window(size_t i, int32_t *inputs, int32_t *targets) const;

 private:
  const std::vector<uint8_t> *bytes_;
  size_t begin_, context_, count_;
};

// The training part (the first 1 - validation_fraction of the bytes) and the validation part (the rest),
// split by position. DPT_ERROR_INVALID_ARGUMENT when context is 0, the fraction is not in (0, 1), or a part
// has fewer than context + 1 bytes ("a context of 128 needs at least 129 bytes in each part; the validation
// part has 50").
struct TextSplits {
  TokenWindows train, validation;
};
TextSplits split_text(const TextCorpus &corpus, size_t context, double validation_fraction = 0.1);

constexpr size_t kByteVocabulary = 256;

// Every window as one sample: int32 tokens [context], context targets (the next bytes), 256 classes.
Dataset token_dataset(const TokenWindows &windows);

}  // namespace dpt
