// The byte-level text reader and its windows (src/data/text_corpus.hpp): files joined in name order, a
// directory's binary files and symbolic links skipped and counted, bad text named with its offset, the
// UTF-8 rules (NUL, truncated, overlong, surrogate, above U+10FFFF), windows whose targets are the inputs
// shifted by one, the split by position and its errors; and Debian's fortunes corpus when installed.
#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "data/text_corpus.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
extern "C" {
#include <cmocka.h>
}

#include "core_test_util.hpp"

namespace {

std::string temp_dir() {
  char pattern[] = "/tmp/dpt-text-XXXXXX";
  const char *dir = mkdtemp(pattern);
  assert_non_null(dir);
  return dir;
}

// Removes a directory made by temp_dir and the files and links in it.
void remove_dir(const std::string &dir) {
  if (DIR *d = opendir(dir.c_str())) {
    while (const dirent *e = readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
        unlink((dir + "/" + e->d_name).c_str());
    closedir(d);
  }
  rmdir(dir.c_str());
}

void write(const std::string &path, const std::string &bytes) {
  FILE *f = std::fopen(path.c_str(), "wb");
  assert_non_null(f);
  assert_int_equal(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  std::fclose(f);
}

size_t bad(const std::string &bytes) {
  return dpt::first_non_text_byte(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
}

void test_utf8_rules(void **) {
  for (const std::string text : {"plain ASCII\n\t\x08 with a backspace (fortune's overstriking)",
                                 "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"})  // 2, 3 and 4 bytes
    assert_int_equal(bad(text), text.size());
  assert_int_equal(bad(std::string("a\0b", 3)), 1);  // NUL
  assert_int_equal(bad("ab\xc3"), 2);                // truncated
  assert_int_equal(bad("ab\xc3x"), 2);               // not a continuation
  assert_int_equal(bad("\x80"), 0);                  // a continuation first
  assert_int_equal(bad("\xc0\xaf"), 0);              // overlong (2 bytes)
  assert_int_equal(bad("\xe0\x80\xaf"), 0);          // overlong (3 bytes)
  assert_int_equal(bad("x\xed\xa0\x80"), 1);         // a surrogate, U+D800
  assert_int_equal(bad("\xf4\x90\x80\x80"), 0);      // above U+10FFFF
  assert_int_equal(bad("\xf5\x80\x80\x80"), 0);
}

void test_directory_in_name_order(void **) {
  const std::string dir = temp_dir();
  write(dir + "/b.txt", "second\n");
  write(dir + "/a", "first\n");
  write(dir + "/a.dat", std::string("\x00\x00\x01\x02", 4));  // a binary index, as fortune's
  write(dir + "/.hidden", "never read\n");
  assert_int_equal(symlink("a", (dir + "/a.u8").c_str()), 0);  // fortune's .u8 links: not read twice
  const dpt::TextCorpus c = dpt::load_text_corpus(dir);
  assert_string_equal(std::string(c.bytes.begin(), c.bytes.end()).c_str(), "first\nsecond\n");
  assert_int_equal(c.files.size(), 2);
  assert_string_equal(c.files[0].c_str(), (dir + "/a").c_str());
  assert_int_equal(c.skipped, 1);
  assert_string_equal(c.first_skipped.c_str(), (dir + "/a.dat: a NUL byte at offset 0").c_str());
  remove_dir(dir);
}

void test_errors(void **) {
  const std::string dir = temp_dir();
  write(dir + "/latin1", "caf\xe9\n");
  write(dir + "/empty", "");
  std::string m = dpt_test::expect_error([&] { dpt::load_text_corpus(dir + "/latin1"); }, DPT_ERROR_FORMAT,
                                         "a Latin-1 file");
  assert_non_null(std::strstr(m.c_str(), "is not UTF-8 text: not UTF-8 at offset 3"));
  m = dpt_test::expect_error([&] { dpt::load_text_corpus(dir + "/empty"); }, DPT_ERROR_FORMAT,
                             "an empty file");
  assert_non_null(std::strstr(m.c_str(), "is empty"));
  // A directory without text: its files are skipped (the empty one adds nothing), and it says so.
  m = dpt_test::expect_error([&] { dpt::load_text_corpus(dir); }, DPT_ERROR_FORMAT,
                             "a directory without text");
  assert_non_null(std::strstr(m.c_str(), "holds no UTF-8 text (1 other files, the first"));
  dpt_test::expect_error([&] { dpt::load_text_corpus(dir + "/missing"); }, DPT_ERROR_IO, "a missing file");
  write(dir + "/big", std::string(100, 'x'));
  dpt_test::expect_error([&] { dpt::load_text_corpus(dir + "/big", 99); }, DPT_ERROR_FORMAT,
                         "over max_bytes");
  remove_dir(dir);
}

void test_windows_and_split(void **) {
  dpt::TextCorpus c;
  for (int i = 0; i < 100; ++i) c.bytes.push_back(uint8_t(i));
  const dpt::TextSplits s = dpt::split_text(c, 8, 0.1);  // train bytes 0..89, validation 90..99
  assert_int_equal(s.train.size(), (90 - 1) / 8);        // 11 windows
  assert_int_equal(s.validation.size(), (10 - 1) / 8);   // 1
  std::vector<int32_t> x(8), y(8);
  s.train.window(3, x.data(), y.data());
  for (int t = 0; t < 8; ++t) {
    assert_int_equal(x[size_t(t)], 24 + t);
    assert_int_equal(y[size_t(t)], 25 + t);  // the inputs shifted by one
  }
  s.validation.window(0, x.data(), y.data());
  assert_int_equal(x[0], 90);
  assert_int_equal(y[7], 98);
  dpt_test::expect_error([&] { s.train.window(11, x.data(), y.data()); }, DPT_ERROR_OUT_OF_RANGE,
                         "a window past the end");
  // Every training byte but the last is a target exactly once: windows share their boundary token.
  s.train.window(10, x.data(), y.data());
  assert_int_equal(y[7], 88);
  std::string m = dpt_test::expect_error([&] { dpt::split_text(c, 10, 0.1); }, DPT_ERROR_INVALID_ARGUMENT,
                                         "a context as long as the validation part");
  assert_non_null(std::strstr(
      m.c_str(), "a context of 10 needs at least 11 bytes in each part; the validation part has 10"));
  dpt_test::expect_error([&] { dpt::split_text(c, 0, 0.1); }, DPT_ERROR_INVALID_ARGUMENT, "context 0");
  dpt_test::expect_error([&] { dpt::split_text(c, 4, 1.0); }, DPT_ERROR_INVALID_ARGUMENT, "fraction 1");
}

// Debian's fortunes (the reference corpus): its text files are read, its .dat indexes skipped, its .u8
// links not read twice.
void test_fortunes(void **) {
  const char *dir = "/usr/share/games/fortunes";
  if (access((std::string(dir) + "/fortunes").c_str(), R_OK) != 0) {
    print_message("SKIPPED: %s not installed (Debian package fortunes)\n", dir);
    skip();
  }
  const dpt::TextCorpus c = dpt::load_text_corpus(dir);
  print_message("fortunes: %zu files, %zu bytes, %zu skipped (first: %s)\n", c.files.size(), c.bytes.size(),
                c.skipped, c.first_skipped.c_str());
  assert_true(c.bytes.size() > 1000000);
  assert_true(c.skipped == c.files.size());  // one .dat index per text file
  const dpt::TextSplits s = dpt::split_text(c, 128);
  assert_true(s.train.size() > 10000 && s.validation.size() > 1000);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_utf8_rules), cmocka_unit_test(test_directory_in_name_order),
      cmocka_unit_test(test_errors),     cmocka_unit_test(test_windows_and_split),
      cmocka_unit_test(test_fortunes),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
