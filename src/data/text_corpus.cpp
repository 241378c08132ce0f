#include "data/text_corpus.hpp"

#include <cmath>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/platform.hpp"

namespace dpt {

size_t first_non_text_byte(const uint8_t *data, size_t size) {
  size_t i = 0;
  while (i < size) {
    const uint8_t b = data[i];
    if (b == 0) return i;
    if (b < 0x80) {
      ++i;
      continue;
    }
    size_t length;
    uint32_t code;
    if (b >= 0xC2 && b <= 0xDF) {
      length = 2, code = b & 0x1Fu;
    } else if (b >= 0xE0 && b <= 0xEF) {
      length = 3, code = b & 0x0Fu;
    } else if (b >= 0xF0 && b <= 0xF4) {
      length = 4, code = b & 0x07u;
    } else {
      return i;  // a continuation byte first, C0/C1 (overlong 2-byte), or F5..FF
    }
    if (size - i < length) return i;
    for (size_t k = 1; k < length; ++k) {
      if ((data[i + k] & 0xC0u) != 0x80u) return i;
      code = (code << 6) | (data[i + k] & 0x3Fu);
    }
    const bool overlong = (length == 3 && code < 0x800) || (length == 4 && code < 0x10000);
    if (overlong || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) return i;
    i += length;
  }
  return size;
}

namespace {

std::string why_not_text(const std::vector<unsigned char> &data, size_t at) {
  return data[at] == 0 ? "a NUL byte at offset " + std::to_string(at)
                       : "not UTF-8 at offset " + std::to_string(at);
}

}  // namespace

TextCorpus load_text_corpus(const std::string &path, uint64_t max_bytes) {
  TextCorpus corpus;
  auto add = [&](const std::string &file, bool named) {
    const std::vector<unsigned char> data = file_io::read_file(file, max_bytes - corpus.bytes.size());
    const size_t bad = first_non_text_byte(data.data(), data.size());
    if (bad < data.size()) {
      DPT_REQUIRE(!named, DPT_ERROR_FORMAT, file + " is not UTF-8 text: " + why_not_text(data, bad));
      if (corpus.skipped++ == 0) corpus.first_skipped = file + ": " + why_not_text(data, bad);
      return;
    }
    corpus.bytes.insert(corpus.bytes.end(), data.begin(), data.end());
    corpus.files.push_back(file);
  };
  if (platform::is_directory(path)) {
    const auto names = platform::regular_files_in(path);
    DPT_REQUIRE(names.has_value(), DPT_ERROR_IO, "cannot list the directory " + path);
    for (const std::string &name : *names) add(path + "/" + name, false);
    DPT_REQUIRE(!corpus.bytes.empty(), DPT_ERROR_FORMAT,
                path + " holds no UTF-8 text (" + std::to_string(corpus.skipped) + " other files" +
                    (corpus.skipped > 0 ? ", the first " + corpus.first_skipped : "") + ")");
  } else {
    add(path, true);
    DPT_REQUIRE(!corpus.bytes.empty(), DPT_ERROR_FORMAT, path + " is empty");
  }
  return corpus;
}

TokenWindows::TokenWindows(const std::vector<uint8_t> *bytes, size_t begin, size_t end, size_t context)
    : bytes_(bytes),
      begin_(begin),
      context_(context),
      count_(end - begin > context ? (end - begin - 1) / context : 0) {}

void TokenWindows::window(size_t i, int32_t *inputs, int32_t *targets) const {
  DPT_REQUIRE(i < count_, DPT_ERROR_OUT_OF_RANGE,
              "window " + std::to_string(i) + " of " + std::to_string(count_));
  const uint8_t *w = bytes_->data() + begin_ + i * context_;
  for (size_t t = 0; t < context_; ++t) inputs[t] = w[t], targets[t] = w[t + 1];
}

Dataset token_dataset(const TokenWindows &windows) {
  const size_t n = windows.size(), context = windows.context();
  std::vector<int32_t> tokens(n * context), targets(n * context);
  for (size_t i = 0; i < n; ++i) windows.window(i, tokens.data() + i * context, targets.data() + i * context);
  return Dataset::of_tokens(Shape{context}, kByteVocabulary, std::move(tokens), std::move(targets), context);
}

TextSplits split_text(const TextCorpus &corpus, size_t context, double validation_fraction) {
  DPT_REQUIRE(context > 0, DPT_ERROR_INVALID_ARGUMENT, "the context length must be at least 1");
  DPT_REQUIRE(validation_fraction > 0 && validation_fraction < 1, DPT_ERROR_INVALID_ARGUMENT,
              "the validation fraction must be in (0, 1)");
  const size_t n = corpus.bytes.size();
  const size_t split = n - size_t(std::ceil(double(n) * validation_fraction));
  const std::string need = "a context of " + std::to_string(context) + " needs at least " +
                           std::to_string(context + 1) + " bytes in each part; ";
  DPT_REQUIRE(split > context, DPT_ERROR_INVALID_ARGUMENT,
              need + "the training part has " + std::to_string(split));
  DPT_REQUIRE(n - split > context, DPT_ERROR_INVALID_ARGUMENT,
              need + "the validation part has " + std::to_string(n - split));
  return TextSplits{TokenWindows(&corpus.bytes, 0, split, context),
                    TokenWindows(&corpus.bytes, split, n, context)};
}

}  // namespace dpt
