// bfloat16: the upper 16 bits of a float32. The rounding every bf16 GEMM kernel applies to its inputs.
#pragma once

#include <cstdint>
#include <cstring>

namespace dpt::gemm {

// x rounded to bfloat16: to nearest, ties to even; a subnormal to zero of its sign (AVX512_BF16 and AMX
// treat subnormal inputs as zero, so every kernel sees the same values); a NaN stays a (quiet) NaN.
inline uint16_t to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  // Branch-free, so that packing loops vectorize.
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = (u >> 16) | 0x0040u, zero = (u >> 16) & 0x8000u;
  const uint32_t r = (u & 0x7FFFFFFFu) > 0x7F800000u ? nan : (u & 0x7F800000u) == 0 ? zero : rounded;
  return uint16_t(r);
}

inline float from_bf16(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

}  // namespace dpt::gemm
