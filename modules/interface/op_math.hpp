// Float math that the kernels of every backend share, so that they compute the same bits: e^x and tanh for
// the elementwise loops (the tanh GELU, attention's softmax). Branch-free (a clamp, a rounding by the
// 1.5 * 2^23 trick, Cephes' degree-6 polynomial, the exponent's bits), so GCC vectorizes a loop over them
// with SSE2, where a call of std::exp or std::tanh per element costs 10-20 ns; in CUDA they are device
// functions. Every operation is a plain float one (the CPU ops are built with -ffp-contract=off, the
// module's kernels with --fmad=false), so the bits are the same on every x86-64 CPU and GPU.
// Relative error of e^x against exp in double: 8.3e-8 at worst over [-87, 0]
// (tests/core/test_gradients_norms.cpp).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define DPT_OP_MATH __host__ __device__ inline
#else
#define DPT_OP_MATH inline
#endif

namespace dpt::op_math {

// ---- counter-based random numbers (core/rng.hpp uses these; a value is a pure function of its counters) ----

// SplitMix64 finaliser: a strong 64-bit mixing function.
DPT_OP_MATH uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

DPT_OP_MATH uint64_t hash_combine(uint64_t a, uint64_t b) {
  return mix64(a ^ mix64(b));
}

// Uniform in [0, 1) with 24 random bits (exactly representable as float).
DPT_OP_MATH float uniform01(uint64_t bits) {
  return float(bits >> 40) * (1.0f / 16777216.0f);
}

// The random stream of dropout masks (core/rng.hpp's Stream::kDropout).
constexpr uint64_t kDropoutStream = 3;

// Dropout masks (op_call.h): the key of node `node`'s masks at optimizer step `step`, then of one sample of
// the window (its position in it), then the factor of one element: 0 with probability rate, else
// keep_scale = 1 / (1 - rate). A pure function of (seed, step, node, sample, element), so the same whichever
// device, slice or micro-batch computes it.
DPT_OP_MATH uint64_t dropout_key(uint64_t seed, uint64_t step, uint64_t node) {
  return hash_combine(hash_combine(seed, kDropoutStream), hash_combine(step, node));
}
DPT_OP_MATH uint64_t dropout_sample_key(uint64_t key, uint64_t sample) {
  return hash_combine(key, sample);
}
DPT_OP_MATH float dropout_factor(uint64_t sample_key, uint64_t element, float rate, float keep_scale) {
  return uniform01(mix64(sample_key + element)) < rate ? 0.0f : keep_scale;
}

// e^x for x <= 0; x below -87 gives e^-87 (about 1.6e-38, still a normal float).
DPT_OP_MATH float exp_nonpositive(float x) {
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
DPT_OP_MATH float tanh_float(float u) {
  const float a = u < 0.0f ? -u : u;
  const float e = exp_nonpositive(-2.0f * a);
  const float t = (1.0f - e) / (1.0f + e);
  return u < 0.0f ? -t : t;
}

// GELU's tanh approximation, 0.5 v (1 + tanh(sqrt(2 / pi) (v + 0.044715 v^3))), and its derivative: the
// "gelu" op's ints[0] = 1 on every backend (GPT-2's form), within a few float roundings of the double result.
DPT_OP_MATH float gelu_tanh_inner(float v) {
  return 0.7978845608f * (v + 0.044715f * v * v * v);
}
DPT_OP_MATH float gelu_tanh(float v) {
  return 0.5f * v * (1.0f + tanh_float(gelu_tanh_inner(v)));
}
DPT_OP_MATH float gelu_tanh_slope(float v) {
  const float t = tanh_float(gelu_tanh_inner(v));
  return 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * 0.7978845608f * (1.0f + 3.0f * 0.044715f * v * v);
}

}  // namespace dpt::op_math
