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

// ---- counter-based random numbers (core/rng.hpp uses these; a value is a pure function of its counters)
// ----

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

// The logistic sigmoid 1 / (1 + e^-x), from e^-|x| (never above 1): 1 / (1 + t) for x >= 0, t / (1 + t)
// below, within 2 float ulps.
DPT_OP_MATH float sigmoid_float(float x) {
  const float t = exp_nonpositive(x < 0.0f ? x : -x);
  return x >= 0.0f ? 1.0f / (1.0f + t) : t / (1.0f + t);
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

// ---- double precision: exp, log, cos, tanh, erf by fixed sequences of IEEE operations ----------------
// The C runtimes' exp, log and cos (glibc's, mingw-w64's, CUDA's libdevice) each round a few results
// differently, which made a run's bits depend on the platform it ran on (initial weights through the
// Box-Muller transform, the loss, the schedules). These are computed the same way everywhere: range
// reduction, then a polynomial, every step a plain double operation (no fused multiply-adds: the core is
// built without contraction, the CUDA module with --fmad=false). Accuracy, measured against the C runtime
// over their domains in tests/core/test_portable_math.cpp: exp, log, cos, tanh within 3e-15 relative (a
// few ulps of double; exp's subnormal results within their precision), erf 2e-15, x^y 1e-14 for the
// optimizer's powers; what callers need is the same bits everywhere, and float results rounded from them.

DPT_OP_MATH double bits_to_double(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}
DPT_OP_MATH uint64_t double_to_bits(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  return bits;
}

// Rounds to the nearest integer (ties to even) by the 1.5 * 2^52 trick, for |x| < 2^51.
DPT_OP_MATH double round_nearest(double x) {
  return (x + 6755399441055744.0) - 6755399441055744.0;
}

// 2^k for k in [-1074, 1023], exactly.
DPT_OP_MATH double power_of_two(int k) {
  if (k >= -1022) return bits_to_double(uint64_t(k + 1023) << 52);
  return bits_to_double(uint64_t(1) << (k + 1074));  // subnormal
}

// e^x. Overflows to infinity above 709.78, underflows to 0 below -745.13; NaN stays NaN.
DPT_OP_MATH double exp_double(double x) {
  if (!(x == x)) return x;
  if (x > 709.782712893384) return bits_to_double(0x7ff0000000000000ULL);
  if (x < -745.1332191019412) return 0.0;
  // x = k ln 2 + r, |r| <= ln 2 / 2; ln 2 in two parts, the first with 32 trailing zero bits so that k times
  // it is exact.
  const double k = round_nearest(x * 1.4426950408889634);
  const double r = (x - k * 6.93147180369123816490e-01) - k * 1.90821492927058770002e-10;
  // e^r by its Taylor series to r^14 / 14! (truncation below 1e-17 for |r| <= 0.35), Horner's rule.
  double p = 1.0 / 87178291200.0;
  p = p * r + 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r * r + r + 1.0;
  const int n = int(k);
  // Scaled in two steps where 2^n alone is not a normal double (results near overflow or subnormal).
  if (n > 1000) return p * power_of_two(1000) * power_of_two(n - 1000);
  if (n < -1000) return p * power_of_two(n + 1000) * power_of_two(-1000);
  return p * power_of_two(n);
}

// The natural logarithm: -infinity at 0, NaN below 0 and for NaN, infinity at infinity.
DPT_OP_MATH double log_double(double x) {
  if (!(x > 0.0))
    return x == 0.0 ? bits_to_double(0xfff0000000000000ULL) : bits_to_double(0x7ff8000000000000ULL);
  if (x == bits_to_double(0x7ff0000000000000ULL)) return x;
  int e = 0;
  if (x < 2.2250738585072014e-308) {  // subnormal: scale into the normal range first
    x *= 18014398509481984.0;         // 2^54
    e = -54;
  }
  const uint64_t bits = double_to_bits(x);
  e += int((bits >> 52) & 0x7ff) - 1023;
  double m = bits_to_double((bits & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);  // in [1, 2)
  if (m > 1.4142135623730951) {  // into [sqrt(1/2), sqrt(2)), so that |s| <= 0.1716 below
    m *= 0.5;
    e += 1;
  }
  // log m = 2 atanh(s), s = (m - 1) / (m + 1): the odd series to s^23 (truncation below 1e-18).
  const double f = m - 1.0;
  const double s = f / (2.0 + f);
  const double s2 = s * s;
  double q = 1.0 / 23.0;
  q = q * s2 + 1.0 / 21.0;
  q = q * s2 + 1.0 / 19.0;
  q = q * s2 + 1.0 / 17.0;
  q = q * s2 + 1.0 / 15.0;
  q = q * s2 + 1.0 / 13.0;
  q = q * s2 + 1.0 / 11.0;
  q = q * s2 + 1.0 / 9.0;
  q = q * s2 + 1.0 / 7.0;
  q = q * s2 + 1.0 / 5.0;
  q = q * s2 + 1.0 / 3.0;
  const double log_m = 2.0 * s + 2.0 * s * s2 * q;
  const double de = double(e);
  return de * 6.93147180369123816490e-01 + (log_m + de * 1.90821492927058770002e-10);
}

// cos x for |x| <= 1e5 (the callers' arguments lie in [0, 2 pi]); NaN beyond and for infinities.
DPT_OP_MATH double cos_double(double x) {
  if (!(x <= 1e5 && x >= -1e5)) return bits_to_double(0x7ff8000000000000ULL);
  // x = n pi/2 + r, |r| <= pi/4, with pi/2 in three parts (Cody and Waite; fdlibm's pio2_1, _2, _3).
  const double n = round_nearest(x * 6.36619772367581382433e-01);
  const double r = ((x - n * 1.57079632673412561417e+00) - n * 6.07710050650619224932e-11) -
                   n * 2.02226624871116645580e-21;
  const double r2 = r * r;
  // cos r and sin r by their Taylor series to r^18 and r^19 (truncation below 1e-18 for |r| <= pi/4).
  double c = 1.0 / 6402373705728000.0;
  c = c * r2 - 1.0 / 20922789888000.0;
  c = c * r2 + 1.0 / 87178291200.0;
  c = c * r2 - 1.0 / 479001600.0;
  c = c * r2 + 1.0 / 3628800.0;
  c = c * r2 - 1.0 / 40320.0;
  c = c * r2 + 1.0 / 720.0;
  c = c * r2 - 1.0 / 24.0;
  c = c * r2 + 0.5;
  const double cos_r = 1.0 - c * r2;
  double t = 1.0 / 121645100408832000.0;
  t = t * r2 - 1.0 / 355687428096000.0;
  t = t * r2 + 1.0 / 1307674368000.0;
  t = t * r2 - 1.0 / 6227020800.0;
  t = t * r2 + 1.0 / 39916800.0;
  t = t * r2 - 1.0 / 362880.0;
  t = t * r2 + 1.0 / 5040.0;
  t = t * r2 - 1.0 / 120.0;
  t = t * r2 + 1.0 / 6.0;
  const double sin_r = r - r * r2 * t;
  switch (int64_t(n) & 3) {
    case 0:
      return cos_r;
    case 1:
      return -sin_r;
    case 2:
      return -cos_r;
    default:
      return sin_r;
  }
}

// x^y for x > 0 (the optimizer's decays and bias corrections), as e^(y log x).
DPT_OP_MATH double pow_positive(double x, double y) {
  return exp_double(y * log_double(x));
}

// tanh x: odd; +-1 beyond 20.
DPT_OP_MATH double tanh_double(double x) {
  const double a = x < 0.0 ? -x : x;
  if (!(a == a)) return x;
  double t;
  if (a < 0.01) {  // the series to a^9 (truncation below 1e-20), where 1 - e^(-2a) would cancel
    const double a2 = a * a;
    t = a + a * a2 * (-1.0 / 3.0 + a2 * (2.0 / 15.0 + a2 * (-17.0 / 315.0 + a2 * (62.0 / 2835.0))));
  } else if (a > 20.0) {
    t = 1.0;
  } else {
    const double e = exp_double(-2.0 * a);
    t = (1.0 - e) / (1.0 + e);
  }
  return x < 0.0 ? -t : t;
}

// erf x: the Taylor series of 2/sqrt(pi) sum (-1)^k x^(2k+1) / (k! (2k+1)) for |x| <= 2 (terms summed
// until they no longer change the sum; beyond 2 its alternating terms cancel too much), the continued
// fraction of erfc for 2 < |x| < 6 (120 terms, evaluated from the last), +-1 beyond.
DPT_OP_MATH double erf_double(double x) {
  const double a = x < 0.0 ? -x : x;
  if (!(a == a)) return x;
  double r;
  if (a <= 2.0) {
    const double a2 = a * a;
    double term = a, sum = a;
    for (int k = 1; k < 200; ++k) {
      term = -term * a2 / double(k);
      const double next = sum + term / double(2 * k + 1);
      if (next == sum) break;
      sum = next;
    }
    r = 1.1283791670955126 * sum;  // 2 / sqrt(pi)
  } else if (a < 6.0) {
    // erfc a = e^(-a^2) / sqrt(pi) * 1 / (a + (1/2) / (a + 1 / (a + (3/2) / (a + 2 / (a + ...)))))
    double f = a;
    for (int k = 120; k >= 1; --k) f = a + (0.5 * double(k)) / f;
    r = 1.0 - exp_double(-a * a) * 0.5641895835477563 / f;  // 1 / sqrt(pi)
  } else {
    r = 1.0;
  }
  return x < 0.0 ? -r : r;
}

}  // namespace dpt::op_math
