// Counter-based random numbers: a value is a pure function of (seed, stream, counters), so results never
// depend on which device or thread draws them, or in what order.
#pragma once

#include <cmath>
#include <cstdint>

#include "interface/op_math.hpp"

namespace dpt {

// mix64, hash_combine, uniform01: interface/op_math.hpp's, which the kernels of every backend share.
using op_math::hash_combine;
using op_math::mix64;
using op_math::uniform01;

// Random streams: each use of randomness gets its own.
enum class Stream : uint64_t { kInit = 1, kShuffle = 2, kDropout = op_math::kDropoutStream };

// A sequential generator (for initialisation and shuffling), deterministic from its key.
class Rng {
 public:
  explicit Rng(uint64_t key) : state_(mix64(key)) {}
  uint64_t next() { return mix64(state_++); }
  float uniform() { return uniform01(next()); }
  // Uniform integer in [0, n), n > 0 (Lemire's multiply-shift; bias < 2^-32 for n < 2^32).
  uint64_t below(uint64_t n) { return uint64_t((__uint128_t(next()) * n) >> 64); }
  // Standard normal by Box-Muller, computed in double by interface/op_math.hpp's log and cos (the same
  // bits on every platform, unlike the C runtimes').
  double normal() {
    double u1 = (double(next() >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    double u2 = double(next() >> 11) * (1.0 / 9007199254740992.0);
    return std::sqrt(-2.0 * op_math::log_double(u1)) * op_math::cos_double(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

}  // namespace dpt
