// The 16-bit float types and their conversions to and from float32: IEEE 754 binary16 ("half", fp16) and
// bfloat16 (bf16, the upper half of a float32). The roundings the 16-bit GEMM kernels apply to their
// inputs and the gradient all-reduce to what it sends; safetensors' F16 and BF16 tensors.
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
  const uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu;
  // Every case computed, then selected (no branches, so that loops over many values vectorize).
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even.
  const uint32_t normal = (a + 0xC8000FFFu + ((a >> 13) & 1u)) >> 13;  // (15 - 127) << 23, plus rounding
  // Below 2^-14, binary16's subnormals: adding 0.5 (a float whose ulp is 2^-24, binary16's smallest step)
  // rounds the magnitude to a multiple of 2^-24 in the FPU's nearest-even mode; the low bits are then that
  // multiple.
  float magnitude;
  std::memcpy(&magnitude, &a, sizeof magnitude);
  const float sum = magnitude + 0.5f;
  uint32_t small;
  std::memcpy(&small, &sum, sizeof small);
  small -= 0x3F000000u;  // the bits of 0.5f
  uint32_t h = a < 0x38800000u ? small : normal;
  h = a >= 0x477FF000u ? 0x7C00u : h;                        // rounds to infinity (or is one)
  h = a > 0x7F800000u ? 0x7E00u | ((a >> 13) & 0x3FFu) : h;  // NaN, quieted
  return uint16_t(sign | h);
}

// Exact. Branch-free (selects, not jumps), so that the kernels' widening loops vectorize.
inline float from_f16(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, magnitude = h & 0x7FFFu;
  // Normal: the exponent rebiased (15 -> 127); infinity and NaN (exponent 31) rebiased twice, to 255.
  uint32_t bits = (magnitude << 13) + 0x38000000u + (magnitude >= 0x7C00u ? 0x38000000u : 0u);
  bits |= magnitude > 0x7C00u ? 0x00400000u : 0u;  // a NaN quieted, as VCVTPH2PS does
  // Zero and subnormals: magnitude * 2^-24, exact in float32 (and normal there).
  const float small = float(magnitude) * 0x1p-24f;
  uint32_t small_bits;
  std::memcpy(&small_bits, &small, sizeof small_bits);
  bits = magnitude < 0x0400u ? small_bits : bits;
  float x;
  bits |= sign;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

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

// from_f16(to_f16(x)) and from_bf16(to_bf16(x)) without leaving float32: the value a 16-bit type carries,
// for loops over many values (the gradient all-reduce's). Branch-free, so that such loops vectorize.
inline float round_to_f16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  const uint32_t sign = u & 0x80000000u, a = u & 0x7FFFFFFFu;
  // Normal binary16 range: the 13 low mantissa bits rounded off, to nearest even.
  uint32_t bits = (a + 0xFFFu + ((a >> 13) & 1u)) & ~0x1FFFu;
  // Below 2^-14: multiples of 2^-24, by adding and removing 0.5 (whose ulp is 2^-24); both exact.
  float magnitude;
  std::memcpy(&magnitude, &a, sizeof magnitude);
  const float small = (magnitude + 0.5f) - 0.5f;
  uint32_t small_bits;
  std::memcpy(&small_bits, &small, sizeof small_bits);
  bits = a < 0x38800000u ? small_bits : bits;
  bits = a >= 0x477FF000u ? 0x7F800000u : bits;  // rounds to infinity (or is one)
  bits = a > 0x7F800000u ? (a | 0x00400000u) & ~0x1FFFu
                         : bits;  // a NaN, quieted, its payload cut as to_f16 does
  bits |= sign;
  float r;
  std::memcpy(&r, &bits, sizeof r);
  return r;
}

inline float round_to_bf16(float x) {
  return from_bf16(to_bf16(x));
}

}  // namespace dpt
