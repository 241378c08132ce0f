// Shared helpers for the CMocka tests of the C++ core (tests/core/*.cpp).
//
// Include the library headers first, then <cmocka.h>, then this file: CMocka defines a function-like macro
// `fail()` that would clash with dpt::fail() in core/error.hpp if that header were read after <cmocka.h>.
// Every helper is inline so that a test that does not use one gets no warning.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace dpt_test {

// A small deterministic generator for test data (SplitMix64), independent of the library's own RNG so
// that a bug there cannot hide in the reference.
class TestRng {
 public:
  explicit TestRng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1), 53 bits.
  double uniform() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }
  float uniform(float lo, float hi) { return float(lo + (double(hi) - double(lo)) * uniform()); }
  // Uniform integer in [0, n).
  size_t below(size_t n) { return size_t(uniform() * double(n)); }
  std::vector<float> vector(size_t count, float lo, float hi) {
    std::vector<float> v(count);
    for (auto &x : v) x = uniform(lo, hi);
    return v;
  }

 private:
  uint64_t state_;
};

// Fails the current test (with the message) unless `call` throws dpt::Error with `want`. Returns the
// message of the error so that the caller can check what it names.
template <typename F>
std::string expect_error(F &&call, dpt_status want, const char *what) {
  try {
    call();
  } catch (const dpt::Error &e) {
    if (e.status() != want) {
      print_error("%s: dpt::Error with status %d (%s), expected %d\n", what, int(e.status()), e.what(),
                  int(want));
      fail();
    }
    return e.what();
  } catch (const std::exception &e) {
    print_error("%s: std::exception '%s', expected dpt::Error %d\n", what, e.what(), int(want));
    fail();
  }
  print_error("%s: no exception, expected dpt::Error %d\n", what, int(want));
  fail();
  return {};
}

// Tracks the worst |actual - expected| / max(floor, |expected|) over many comparisons and reports the
// first few offenders, so that one failure shows the whole picture rather than just the first element.
class Comparison {
 public:
  Comparison(std::string what, double tolerance, double floor)
      : what_(std::move(what)), tolerance_(tolerance), floor_(floor) {}

  void add(double actual, double expected, const std::string &where) {
    const double scale = std::fmax(floor_, std::fabs(expected));
    const double err = std::fabs(actual - expected) / scale;
    // A NaN anywhere is a failure (the comparison below would silently pass it).
    const bool bad = !(err <= tolerance_);
    if (!(err <= worst_)) worst_ = std::isnan(err) ? INFINITY : std::fmax(worst_, err);
    ++count_;
    if (bad) {
      if (failures_ < 8)
        print_error("%s: %s: got %.9g, expected %.9g (error %.3g > %.3g)\n", what_.c_str(), where.c_str(),
                    actual, expected, err, tolerance_);
      ++failures_;
    }
  }
  // Fails the test if any comparison failed; prints the worst error either way (for the record).
  void finish() const {
    print_message("%-44s %6zu values, worst scaled error %.3g (tolerance %.3g)\n", what_.c_str(), count_,
                  worst_, tolerance_);
    if (failures_ != 0) {
      print_error("%s: %zu of %zu values out of tolerance\n", what_.c_str(), failures_, count_);
      fail();
    }
    if (count_ == 0) {
      print_error("%s: nothing was compared\n", what_.c_str());
      fail();
    }
  }
  double worst() const { return worst_; }

 private:
  std::string what_;
  double tolerance_, floor_;
  double worst_ = 0.0;
  size_t count_ = 0, failures_ = 0;
};

// The whole file (fails the test when it cannot be opened).
inline std::string read_file(const std::string &path) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  assert_non_null(f);
  std::string text;
  char buffer[65536];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) text.append(buffer, n);
  std::fclose(f);
  return text;
}

}  // namespace dpt_test
