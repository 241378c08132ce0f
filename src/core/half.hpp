// IEEE 754 binary16 ("half", fp16): conversions to and from float32. Used by the fp16 GEMM kernels (their
// inputs' rounding) and by safetensors files that store F16 tensors.
#pragma once

#include <cstdint>
#include <cstring>

namespace dpt {

// x rounded to binary16: to nearest, ties to even; subnormal results kept (binary16 has them down to
// 2^-24), a magnitude of 65520 or more to infinity, a NaN to a quiet NaN with the top bits of its payload:
// bit for bit what F16C's VCVTPS2PH gives with round-to-nearest.
inline uint16_t to_f16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return uint16_t(sign | 0x7E00u | ((a >> 13) & 0x3FFu));  // NaN
  if (a >= 0x477FF000u) return uint16_t(sign | 0x7C00u);  // rounds to infinity (or is one)
  if (a < 0x38800000u) {
    // Below 2^-14, binary16's subnormals: adding 0.5 (a float whose ulp is 2^-24, binary16's smallest
    // step) rounds the magnitude to a multiple of 2^-24 in the FPU's nearest-even mode; the low bits
    // are then that multiple.
    const uint32_t magic_bits = 126u << 23;  // 0.5f
    float magnitude, magic;
    std::memcpy(&magnitude, &a, sizeof a);
    std::memcpy(&magic, &magic_bits, sizeof magic);
    const float sum = magnitude + magic;
    uint32_t s;
    std::memcpy(&s, &sum, sizeof s);
    return uint16_t(sign | (s - magic_bits));
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even.
  a += 0xC8000FFFu + ((a >> 13) & 1u);  // (15 - 127) << 23, plus the rounding increment
  return uint16_t(sign | (a >> 13));
}

inline float from_f16(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu;
  uint32_t bits;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float32
    const float magnitude = float(mantissa) * 0x1p-24f;
    std::memcpy(&bits, &magnitude, sizeof bits);
    bits |= sign;
  } else if (exponent == 31) {  // infinity; a NaN quieted, as VCVTPH2PS does
    bits = sign | 0x7F800000u | (mantissa << 13) | (mantissa != 0 ? 0x00400000u : 0u);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

}  // namespace dpt
