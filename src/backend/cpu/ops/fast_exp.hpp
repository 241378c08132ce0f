// e^x in float for the elementwise loops of the CPU kernels: branch-free (a clamp, a rounding by the 1.5 *
// 2^23 trick, Cephes' degree-6 polynomial, the exponent's bits), so GCC vectorizes a loop over it with
// SSE2, where a call of std::exp or std::tanh per element costs 10-20 ns. Every operation is a plain float
// one (the ops library is built with -ffp-contract=off), so the bits are the same on every x86-64 CPU.
// Relative error against exp in double: 8.3e-8 at worst over [-87, 0] (tests/core/test_gradients_norms.cpp).
#pragma once

#include <cstdint>
#include <cstring>

namespace dpt::cpu {

// e^x for x <= 0; x below -87 gives e^-87 (about 1.6e-38, still a normal float).
inline float exp_nonpositive(float x) {
  x = x < -87.0f ? -87.0f : x;
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // x log2(e), rounded
  const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;            // x - n ln 2, in two parts
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (int32_t(n) + 127) << 23;  // 2^n, n in [-126, 0]
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

// tanh(u) = sign(u) (1 - e^{-2|u|}) / (1 + e^{-2|u|}): absolute error 8.9e-8 at worst (relative error is
// larger only where |tanh| is tiny, where 1 + tanh, GELU's use of it, does not see it).
inline float tanh_float(float u) {
  const float a = u < 0.0f ? -u : u;
  const float e = exp_nonpositive(-2.0f * a);
  const float t = (1.0f - e) / (1.0f + e);
  return u < 0.0f ? -t : t;
}

}  // namespace dpt::cpu
