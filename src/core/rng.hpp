// Counter-based random numbers: a value is a pure function of (seed, stream, counters), so results never
// depend on which device or thread draws them, or in what order.
#pragma once

#include <cmath>
#include <cstdint>

namespace dpt {

// SplitMix64 finaliser: a strong 64-bit mixing function.
inline uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

inline uint64_t hash_combine(uint64_t a, uint64_t b) {
  return mix64(a ^ mix64(b));
}

// Uniform in [0, 1) with 24 random bits (exactly representable as float).
inline float uniform01(uint64_t bits) {
  return float(bits >> 40) * (1.0f / 16777216.0f);
}

// Random streams: each use of randomness gets its own.
enum class Stream : uint64_t { kInit = 1, kShuffle = 2, kDropout = 3 };

// A sequential generator (for initialisation and shuffling), deterministic from its key.
class Rng {
 public:
  explicit Rng(uint64_t key) : state_(mix64(key)) {}
  uint64_t next() { return mix64(state_++); }
  float uniform() { return uniform01(next()); }
  // Uniform integer in [0, n), n > 0 (Lemire's multiply-shift; bias < 2^-32 for n < 2^32).
  uint64_t below(uint64_t n) { return uint64_t((__uint128_t(next()) * n) >> 64); }
  // Standard normal by Box-Muller, computed in double.
  double normal() {
    double u1 = (double(next() >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    double u2 = double(next() >> 11) * (1.0 / 9007199254740992.0);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

}  // namespace dpt
