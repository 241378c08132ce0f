// dptrain's GEMM (src/backend/cpu/gemm): every kernel this CPU runs, in float32, bfloat16 and float16,
// against a float64 reference of the same (rounded) inputs over shapes with ragged edges, every transposition
// and alpha/beta; the AVX-512 kernels bit for bit against the portable ones (also where subnormals are
// flushed); a column's result independent of how many columns share the call (what keeps a sample's
// forward the same on any slice); the bfloat16 and float16 roundings themselves (float16 against F16C's
// instructions). Kernels the CPU lacks are reported as not
// run.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backend/cpu/gemm/cpu_features.hpp"
#include "backend/cpu/gemm/gemm.hpp"
#include "backend/cpu/gemm/pack.hpp"
#include "backend/cpu/gemm/pack_avx512.hpp"
#include "core/float16.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
extern "C" {
#include <cmocka.h>
}

#include "core_test_util.hpp"

namespace {

using dpt::gemm::Kernel;
using dpt::gemm::Precision;

constexpr Precision kPrecisions[] = {Precision::kF32, Precision::kBF16, Precision::kF16};

const char *name(Precision p) {
  return p == Precision::kF32 ? "fp32" : p == Precision::kBF16 ? "bf16" : "fp16";
}

struct Case {
  size_t m, n, k;
  bool ta, tb;
  float alpha, beta;
};

struct Problem {
  Case c;
  std::vector<float> a, b, c0;
  size_t lda, ldb, ldc;
};

Problem problem(const Case &c, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  dpt_test::TestRng rng(seed);
  Problem p;
  p.c = c;
  // Leading dimensions larger than the rows, so that strides are exercised.
  p.lda = (c.ta ? c.m : c.k) + 3;
  p.ldb = (c.tb ? c.k : c.n) + 5;
  p.ldc = c.n + 2;
  p.a = rng.vector((c.ta ? c.k : c.m) * p.lda, lo, hi);
  p.b = rng.vector((c.tb ? c.n : c.k) * p.ldb, lo, hi);
  p.c0 = rng.vector(c.m * p.ldc, lo, hi);
  return p;
}

std::vector<float> run(Precision precision, const Problem &p) {
  std::vector<float> c = p.c0;
  dpt::gemm::gemm(precision, p.c.ta, p.c.tb, p.c.m, p.c.n, p.c.k, p.c.alpha, p.a.data(), p.lda, p.b.data(),
                  p.ldb, p.c.beta, c.data(), p.ldc);
  return c;
}

float input(Precision precision, float x) {
  if (precision == Precision::kF16) return dpt::from_f16(dpt::to_f16(x));
  return precision == Precision::kBF16 ? dpt::from_bf16(dpt::to_bf16(x)) : x;
}

// |C - reference| <= 1e-6 * (k + 2) * (|alpha| sum |a b| + |beta c|) per element, the reference in float64
// over the inputs as the precision rounds them; elements outside the m x n block untouched.
void check_against_reference(Precision precision, const Problem &p, const std::vector<float> &got,
                             const std::string &what) {
  const Case &c = p.c;
  for (size_t i = 0; i < c.m; ++i)
    for (size_t j = 0; j < p.ldc; ++j) {
      const float old = p.c0[i * p.ldc + j];
      if (j >= c.n) {
        if (std::memcmp(&got[i * p.ldc + j], &old, sizeof old) != 0)
          fail_msg("%s: C[%zu][%zu] outside written", what.c_str(), i, j);
        continue;
      }
      double sum = 0, magnitude = 0;
      for (size_t l = 0; l < c.k; ++l) {
        const double x = input(precision, c.ta ? p.a[l * p.lda + i] : p.a[i * p.lda + l]);
        const double y = input(precision, c.tb ? p.b[j * p.ldb + l] : p.b[l * p.ldb + j]);
        sum += x * y;
        magnitude += std::fabs(x * y);
      }
      const double want = c.alpha * sum + (c.beta == 0 ? 0.0 : double(c.beta) * old);
      const double bound =
          1e-6 * double(c.k + 2) * (std::fabs(c.alpha) * magnitude + std::fabs(c.beta * old));
      if (!(std::fabs(got[i * p.ldc + j] - want) <= bound))
        fail_msg("%s: C[%zu][%zu] = %.9g, float64 reference %.9g (bound %.3g)", what.c_str(), i, j,
                 double(got[i * p.ldc + j]), want, bound);
    }
}

std::vector<Case> cases() {
  std::vector<Case> out;
  const size_t ms[] = {1, 12, 13, 33, 97}, ns[] = {1, 31, 32, 65}, ks[] = {1, 2, 3, 33, 257, 600};
  size_t i = 0;
  for (size_t m : ms)
    for (size_t n : ns)
      for (size_t k : ks) {
        const float alphas[] = {1.0f, 0.5f, -2.0f}, betas[] = {0.0f, 1.0f, 0.25f};
        out.push_back(Case{m, n, k, (i & 1) != 0, (i & 2) != 0, alphas[i % 3], betas[(i / 3) % 3]});
        ++i;
      }
  out.push_back(Case{200, 1100, 70, false, false, 1.0f, 0.0f});  // more than one block of columns
  out.push_back(Case{7, 5, 1100, true, true, 1.0f, 1.0f});       // more than one block of k
  return out;
}

// Runs body with each available kernel of p pinned; restores the default after.
template <typename Body>
void each_kernel(Precision p, Body &&body) {
  const Kernel before = dpt::gemm::kernel(p);
  for (Kernel k : {Kernel::kPortable, Kernel::kAvx512, Kernel::kAvx512F, Kernel::kAmx, Kernel::kOpenBlas}) {
    if (!dpt::gemm::set_kernel(p, k)) {
      const bool computes_p = p == Precision::kF32    ? k != Kernel::kAmx && k != Kernel::kAvx512F
                              : p == Precision::kBF16 ? k != Kernel::kOpenBlas
                                                      : k == Kernel::kPortable || k == Kernel::kAvx512;
      if (computes_p) std::printf("%s %s: not run (this CPU lacks it)\n", name(p), dpt::gemm::kernel_name(k));
      continue;
    }
    body(k);
  }
  dpt::gemm::set_kernel(p, before);
}

void test_against_float64(void **) {
  for (Precision p : kPrecisions)
    each_kernel(p, [&](Kernel k) {
      size_t n = 0;
      for (const Case &c : cases()) {
        const Problem pr = problem(c, 100 + n++);
        char what[160];
        std::snprintf(what, sizeof what, "%s %s m=%zu n=%zu k=%zu ta=%d tb=%d alpha=%g beta=%g", name(p),
                      dpt::gemm::kernel_name(k), c.m, c.n, c.k, c.ta, c.tb, double(c.alpha), double(c.beta));
        check_against_reference(p, pr, run(p, pr), what);
      }
      std::printf("%s %s: %zu shapes within the float64 bound\n", name(p), dpt::gemm::kernel_name(k), n);
    });
}

// The AVX-512 kernels compute what the portable ones do, bit for bit, also with values whose products
// and sums fall to the subnormal range (flushed by VDPBF16PS, and by the portable kernel with it). For
// bf16 that is VDPBF16PS as Intel defines it, verified on Intel CPUs; AMD's may round otherwise (the SIMDe
// project found AMD EPYC results that Intel's emulator does not reproduce), so on other vendors the test
// counts the values that differ and asserts only test_against_float64's bound. The AVX-512F kernel that
// emulates VDPBF16PS with fused multiply-adds is asserted bit for bit everywhere. float16's extreme ranges:
// inputs among its subnormals, and beyond 65504 (infinite once rounded: the sums hold infinities and NaNs).
void test_avx512_equals_portable(void **) {
  const bool intel = std::strcmp(dpt::gemm::cpu_features().vendor, "GenuineIntel") == 0;
  const std::pair<Precision, Kernel> kernels[] = {{Precision::kF32, Kernel::kAvx512},
                                                  {Precision::kBF16, Kernel::kAvx512},
                                                  {Precision::kBF16, Kernel::kAvx512F},
                                                  {Precision::kF16, Kernel::kAvx512}};
  for (const auto &[p, k] : kernels) {
    const char *kernel = dpt::gemm::kernel_name(k);
    if (!dpt::gemm::available(p, k)) {
      std::printf("%s %s: not run (this CPU lacks it)\n", name(p), kernel);
      continue;
    }
    const Kernel before = dpt::gemm::kernel(p);
    const bool bitwise = p != Precision::kBF16 || k != Kernel::kAvx512 || intel;
    // tiny: near 1e-19 (products near FLT_MIN, sums crossing it); for float16, near its subnormals.
    const float tiny = p == Precision::kF16 ? 1e-4f : 3e-19f, huge = p == Precision::kF16 ? 7e4f : 1e30f;
    size_t n = 0, values = 0, differ = 0;
    for (const Case &c : cases()) {
      for (float range : {1.0f, tiny, huge}) {
        const Problem pr = problem(c, 500 + n, -range, range);
        dpt::gemm::set_kernel(p, Kernel::kPortable);
        const std::vector<float> want = run(p, pr);
        dpt::gemm::set_kernel(p, k);
        const std::vector<float> got = run(p, pr);
        for (size_t i = 0; i < got.size(); ++i) {
          const bool same = std::memcmp(&got[i], &want[i], sizeof(float)) == 0 ||
                            (std::isnan(got[i]) && std::isnan(want[i]));
          if (!same && (++differ, bitwise))
            fail_msg(
                "%s %s vs portable, m=%zu n=%zu k=%zu, inputs within %g: element %zu is %.9g, "
                "portable %.9g",
                name(p), kernel, c.m, c.n, c.k, double(range), i, double(got[i]), double(want[i]));
        }
        values += got.size();
      }
      ++n;
    }
    dpt::gemm::set_kernel(p, before);
    std::printf("%s %s vs portable on %s: %zu of %zu values differ (over %zu shapes)%s\n", name(p), kernel,
                dpt::gemm::cpu_features().vendor, differ, values, 3 * n,
                bitwise ? ", asserted bit for bit" : ", not asserted on this vendor");
  }
}

// Columns [5, 5 + 40) of a 130-column product equal the product of those 40 columns alone, and rows
// [3, 3 + 20) of 75 rows those rows alone, bit for bit, for every kernel.
void test_columns_do_not_depend_on_their_neighbours(void **) {
  for (Precision p : kPrecisions)
    each_kernel(p, [&](Kernel k) {
      if (k == Kernel::kOpenBlas) return;  // not ours to promise
      const size_t m = 75, n = 130, kk = 300;
      dpt_test::TestRng rng(9);
      const std::vector<float> a = rng.vector(m * kk, -1, 1), b = rng.vector(kk * n, -1, 1);
      std::vector<float> whole(m * n), part(20 * 40);
      dpt::gemm::gemm(p, false, false, m, n, kk, 1.0f, a.data(), kk, b.data(), n, 0.0f, whole.data(), n);
      dpt::gemm::gemm(p, false, false, 20, 40, kk, 1.0f, a.data() + 3 * kk, kk, b.data() + 5, n, 0.0f,
                      part.data(), 40);
      for (size_t i = 0; i < 20; ++i)
        if (std::memcmp(&part[i * 40], &whole[(3 + i) * n + 5], 40 * sizeof(float)) != 0)
          fail_msg("%s %s: row %zu of the part differs from the whole's", name(p), dpt::gemm::kernel_name(k),
                   i);
    });
}

// A packed op(A) (gemm_packed_a), filled in blocks of rows from separate copies of those rows (as a
// Winograd layer fills it from a few transformed kernels at a time), multiplies to gemm()'s bits, for every
// kernel, shape, transposition and alpha/beta of cases(); the bytes after the packed size stay untouched.
void test_packed_a_equals_gemm(void **) {
  for (Precision p : kPrecisions)
    each_kernel(p, [&](Kernel k) {
      size_t n = 0;
      for (const Case &c : cases()) {
        const Problem pr = problem(c, 900 + n++);
        const std::vector<float> want = run(p, pr);
        const size_t unit = dpt::gemm::packed_a_row_unit(p), bytes = dpt::gemm::packed_a_bytes(p, c.m, c.k);
        std::vector<unsigned char> storage(bytes + 64 + 32, 0xa5);
        unsigned char *packed = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64);
        dpt::gemm::begin_packed_a(p, c.ta, c.m, c.k, packed);
        // Blocks of one unit, then two, then three, ... (the last one ragged).
        for (size_t i0 = 0, units = 1; i0 < c.m; i0 += units * unit, ++units) {
          const size_t rows = std::min(units * unit, c.m - i0);
          // op(A)'s rows [i0, i0 + rows) copied out, with the problem's leading dimension.
          std::vector<float> block(pr.a.size(), 0.0f);
          for (size_t r = 0; r < rows; ++r)
            for (size_t q = 0; q < c.k; ++q)
              (c.ta ? block[q * pr.lda + r] : block[r * pr.lda + q]) =
                  c.ta ? pr.a[q * pr.lda + i0 + r] : pr.a[(i0 + r) * pr.lda + q];
          dpt::gemm::pack_a_rows(packed, block.data(), pr.lda, i0, rows);
        }
        std::vector<float> got = pr.c0;
        dpt::gemm::gemm_packed_a(packed, c.tb, c.n, c.alpha, pr.b.data(), pr.ldb, c.beta, got.data(), pr.ldc);
        if (std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) != 0)
          fail_msg("%s %s m=%zu n=%zu k=%zu ta=%d tb=%d: the packed A's product differs from gemm's", name(p),
                   dpt::gemm::kernel_name(k), c.m, c.n, c.k, c.ta, c.tb);
        for (size_t i = packed - storage.data() + bytes; i < storage.size(); ++i)
          if (storage[i] != 0xa5)
            fail_msg("%s %s: byte %zu past the packed A written", name(p), dpt::gemm::kernel_name(k), i);
      }
      std::printf("%s %s: %zu shapes, packed A bit for bit gemm's\n", name(p), dpt::gemm::kernel_name(k), n);
    });
}

// Operands stored as bfloat16 (gemm_bf16, and gemm_packed_a's bfloat16 B) multiply to gemm(kBF16)'s bits
// on their values in float32, for every bf16 kernel (the AVX-512 packers read them, the others' are fed
// widened strips) and every shape of cases() (several strips of rows and columns, several k blocks). Some
// elements are bfloat16 subnormals, which to_bf16 never makes: read as float32 they are subnormal, which
// kBF16 takes as zero, so the bfloat16 operand must be rounded as a float32 one is, not passed through.
void test_bf16_operands_equal_their_float32_values(void **) {
  const Precision p = Precision::kBF16;
  each_kernel(p, [&](Kernel k) {
    size_t n = 0;
    for (const Case &c : cases()) {
      Problem pr = problem(c, 1300 + n++);
      std::vector<uint16_t> a16(pr.a.size()), b16(pr.b.size());
      for (size_t i = 0; i < a16.size(); ++i)
        a16[i] = i % 7 == 3 ? uint16_t(0x8000 * (i % 2) + 1 + i % 0x7F) : dpt::to_bf16(pr.a[i]);
      for (size_t i = 0; i < b16.size(); ++i)
        b16[i] = i % 5 == 2 ? uint16_t(0x8000 * (i % 2) + 1 + i % 0x7F) : dpt::to_bf16(pr.b[i]);
      for (size_t i = 0; i < a16.size(); ++i) pr.a[i] = dpt::from_bf16(a16[i]);
      for (size_t i = 0; i < b16.size(); ++i) pr.b[i] = dpt::from_bf16(b16[i]);
      const std::vector<float> want = run(p, pr);
      std::vector<float> got = pr.c0;
      dpt::gemm::gemm_bf16(c.ta, c.tb, c.m, c.n, c.k, c.alpha, a16.data(), pr.lda, b16.data(), pr.ldb, c.beta,
                           got.data(), pr.ldc);
      if (std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) != 0)
        fail_msg("bf16 %s m=%zu n=%zu k=%zu ta=%d tb=%d: gemm_bf16 differs from gemm on the values",
                 dpt::gemm::kernel_name(k), c.m, c.n, c.k, c.ta, c.tb);
      // A packed from float32, B read as bfloat16.
      std::vector<unsigned char> storage(dpt::gemm::packed_a_bytes(p, c.m, c.k) + 64);
      unsigned char *packed = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64);
      dpt::gemm::begin_packed_a(p, c.ta, c.m, c.k, packed);
      dpt::gemm::pack_a_rows(packed, pr.a.data(), pr.lda, 0, c.m);
      got = pr.c0;
      dpt::gemm::gemm_packed_a(packed, c.tb, c.n, c.alpha, b16.data(), pr.ldb, c.beta, got.data(), pr.ldc);
      if (std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) != 0)
        fail_msg("bf16 %s m=%zu n=%zu k=%zu ta=%d tb=%d: the packed A times a bfloat16 B differs from gemm",
                 dpt::gemm::kernel_name(k), c.m, c.n, c.k, c.ta, c.tb);
    }
    std::printf("bf16 %s: %zu shapes, bfloat16 operands bit for bit gemm's on their values\n",
                dpt::gemm::kernel_name(k), n);
  });
}

uint16_t bits(float x) {
  return dpt::to_bf16(x);
}

float f(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

void test_bf16_rounding(void **) {
  assert_int_equal(bits(1.0f), 0x3F80);
  assert_int_equal(bits(f(0x3F808000u)), 0x3F80);  // a tie, even below: stays
  assert_int_equal(bits(f(0x3F818000u)), 0x3F82);  // a tie, odd below: up to even
  assert_int_equal(bits(f(0x3F808001u)), 0x3F81);  // above the tie: up
  assert_int_equal(bits(f(0x3F807FFFu)), 0x3F80);  // below it: down
  assert_int_equal(bits(-2.5f), 0xC020);
  assert_int_equal(bits(std::numeric_limits<float>::infinity()), 0x7F80);
  assert_int_equal(bits(std::numeric_limits<float>::max()), 0x7F80);  // rounds up to infinity
  assert_int_equal(bits(f(0x00400000u)), 0x0000);                     // subnormal: zero
  assert_int_equal(bits(f(0x80000001u)), 0x8000);                     // of its sign
  assert_int_equal(bits(f(0x00800000u)), 0x0080);                     // FLT_MIN stays
  const uint16_t nan = bits(std::numeric_limits<float>::quiet_NaN());
  assert_true((nan & 0x7F80) == 0x7F80 && (nan & 0x7F) != 0);
  assert_true((bits(f(0x7F800001u)) & 0x7F) != 0);  // a signalling NaN whose payload is in the low bits
  assert_true(dpt::from_bf16(0x3F80) == 1.0f);
}

__attribute__((target("f16c"))) uint16_t f16c_round(float x) {
  return uint16_t(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
__attribute__((target("f16c"))) float f16c_widen(uint16_t h) {
  return _cvtsh_ss(h);
}

// core/float16.hpp's float16 conversions: known values, and F16C's VCVTPS2PH / VCVTPH2PS on every binary16
// value and on 2^24 + float32 values (every exponent; ties, NaNs, the boundaries of subnormals and infinity).
void test_f16_rounding(void **) {
  assert_int_equal(dpt::to_f16(1.0f), 0x3C00);
  assert_int_equal(dpt::to_f16(65504.0f), 0x7BFF);
  assert_int_equal(dpt::to_f16(65519.99f), 0x7BFF);
  assert_int_equal(dpt::to_f16(65520.0f), 0x7C00);   // the tie above the largest rounds to infinity
  assert_int_equal(dpt::to_f16(-0x1p-24f), 0x8001);  // the smallest subnormal
  assert_int_equal(dpt::to_f16(0x1p-25f), 0x0000);   // half of it: a tie, to even (zero)
  assert_int_equal(dpt::to_f16(0x1.8p-25f), 0x0001);
  assert_int_equal(dpt::to_f16(0x1.ff8p-15f), 0x03FF);  // the largest subnormal
  assert_true(dpt::from_f16(0x7BFF) == 65504.0f && dpt::from_f16(0x0001) == 0x1p-24f);
  if (!__builtin_cpu_supports("f16c")) {
    std::printf("float16 against F16C: not run (this CPU lacks F16C)\n");
    return;
  }
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float want = f16c_widen(uint16_t(h)), got = dpt::from_f16(uint16_t(h));
    if (std::memcmp(&want, &got, sizeof want) != 0) fail_msg("from_f16(%04x) differs from VCVTPH2PS", h);
  }
  size_t checked = 0;
  for (uint64_t u = 0; u <= 0xFFFFFFFFu; u += 251, ++checked) {
    float x;
    const uint32_t bits = uint32_t(u);
    std::memcpy(&x, &bits, sizeof x);
    if (dpt::to_f16(x) != f16c_round(x))
      fail_msg("to_f16(%08x) = %04x, VCVTPS2PH gives %04x", bits, dpt::to_f16(x), f16c_round(x));
    const float round_trip = dpt::from_f16(dpt::to_f16(x)), rounded = dpt::round_to_f16(x);
    if (std::memcmp(&round_trip, &rounded, sizeof rounded) != 0)
      fail_msg("round_to_f16(%08x) differs from from_f16(to_f16(x))", bits);
  }
  std::printf("float16 conversions equal F16C's on 65536 + %zu values (round_to_f16 too)\n", checked);
}

// The streaming AVX-512 packers write pack.hpp's panels bit for bit: values around every rounding case
// (ties to even, NaN, infinities, subnormals, the largest floats), ragged edges, k padded to 2 and to 32.
void test_avx512_packers_equal_portable(void **) {
  if (!dpt::gemm::cpu_features().avx512) {
    std::printf("AVX-512 packers: not run (this CPU lacks AVX-512)\n");
    return;
  }
  // The bfloat16 packers round with VCVTNEPS2BF16: only the bf16 kernels (AVX512_BF16, AMX) call them.
  const bool bf16 = dpt::gemm::cpu_features().avx512_bf16;
  if (!bf16) std::printf("AVX-512 bf16 packers: not run (this CPU lacks AVX512_BF16)\n");
  const size_t rows = 75, cols = 70, ld = 75;
  dpt_test::TestRng rng(3);
  std::vector<float> x = rng.vector(rows * ld, -4, 4);
  const uint32_t specials[] = {0x3F808000u, 0x3F818000u, 0x3F807FFFu, 0x7F800000u, 0xFF800000u, 0x7FC00001u,
                               0x7F800001u, 0x00400000u, 0x80000001u, 0x7F7FFFFFu, 0x00800000u, 0x80000000u};
  for (size_t i = 0; i < x.size(); i += 7) std::memcpy(&x[i], &specials[(i / 7) % 12], 4);
  const dpt::gemm::Operand op{x.data(), ld, false};
  for (size_t kc : {1, 2, 3, 31, 33, 64, 70}) {
    for (size_t width : {cols, size_t(40), size_t(5)}) {
      std::vector<uint32_t> want(8192, 0xDEADBEEF), got(8192, 0xDEADBEEF);
      dpt::gemm::pack_f32_b<32>(op, 2, kc, 1, width, want.data());
      dpt::gemm::pack_f32_b32_rows(op, 2, kc, 1, width, got.data());
      if (want != got) fail_msg("fp32 B panels differ (kc %zu, width %zu)", kc, width);
      std::fill(want.begin(), want.end(), 0xDEADBEEF);
      std::fill(got.begin(), got.end(), 0xDEADBEEF);
      dpt::gemm::pack_f16_b<32>(op, 2, kc, 1, width, want.data());
      dpt::gemm::pack_f16_b32_rows(op, 2, kc, 1, width, got.data());
      if (want != got) fail_msg("fp16 B panels differ (kc %zu, width %zu)", kc, width);
      {
        std::vector<float> t(ld * ld, 0.0f);  // the same matrix stored the other way round
        for (size_t r = 0; r < rows; ++r)
          for (size_t c = 0; c < ld; ++c) t[c * ld + r] = x[r * ld + c];
        std::fill(got.begin(), got.end(), 0xDEADBEEF);
        dpt::gemm::pack_f16_b32_cols(dpt::gemm::Operand{t.data(), ld, true}, 2, kc, 1, width, got.data());
        if (want != got) fail_msg("fp16 B panels, transposed, differ (kc %zu, width %zu)", kc, width);
      }
      for (size_t unit : {2, 32}) {
        if (!bf16) break;
        std::fill(want.begin(), want.end(), 0xDEADBEEF);
        std::fill(got.begin(), got.end(), 0xDEADBEEF);
        dpt::gemm::pack_pairs_b<32>(op, 2, kc, 1, width, want.data(), unit);
        dpt::gemm::pack_pairs_b32_rows(op, 2, kc, 1, width, got.data(), unit);
        if (want != got)
          fail_msg("bf16 B pair panels differ (kc %zu, width %zu, k unit %zu)", kc, width, unit);
        // op(B) transposed: the same matrix stored the other way round.
        std::vector<float> t(ld * ld, 0.0f);
        for (size_t r = 0; r < rows; ++r)
          for (size_t c = 0; c < ld; ++c) t[c * ld + r] = x[r * ld + c];
        const dpt::gemm::Operand op_t{t.data(), ld, true};
        std::fill(got.begin(), got.end(), 0xDEADBEEF);
        dpt::gemm::pack_pairs_b32_cols(op_t, 2, kc, 1, width, got.data(), unit);
        if (want != got) fail_msg("bf16 B pair panels, transposed, differ (kc %zu, width %zu)", kc, width);
      }
    }
    // float16's A rounding, 16 at a time and in the scalar tail.
    std::vector<float> rounded(x.begin(), x.begin() + 16 * kc + 5);
    dpt::gemm::round_f16_in_place(rounded.data(), rounded.size());
    for (size_t i = 0; i < rounded.size(); ++i) {
      const float want = dpt::from_f16(dpt::to_f16(x[i]));
      if (std::memcmp(&rounded[i], &want, sizeof want) != 0) fail_msg("round_f16_in_place: element %zu", i);
    }
    std::vector<float> t(ld * ld, 0.0f);  // x stored the other way round
    for (size_t r = 0; r < rows; ++r)
      for (size_t c = 0; c < ld; ++c) t[c * ld + r] = x[r * ld + c];
    // The AVX-512 bf16 kernel's A pair panels (stored row by row, and transposed).
    if (!bf16) continue;
    for (size_t m : {size_t(1), size_t(12), size_t(20), size_t(33)}) {
      std::vector<uint32_t> want(8192, 0xDEADBEEF), got(8192, 0xDEADBEEF), got_t(8192, 0xDEADBEEF);
      dpt::gemm::pack_pairs_a<12>(op, 1, m, 3, kc, want.data());
      dpt::gemm::pack_pairs_a12_rows(op, 1, m, 3, kc, got.data());
      dpt::gemm::pack_pairs_a12_cols(dpt::gemm::Operand{t.data(), ld, true}, 1, m, 3, kc, got_t.data());
      if (want != got) fail_msg("bf16 A pair panels differ (kc %zu, m %zu)", kc, m);
      if (want != got_t) fail_msg("bf16 A pair panels, transposed, differ (kc %zu, m %zu)", kc, m);
    }
    // AMX's A panels (stored row by row, and transposed): to_bf16 element by element.
    for (size_t m : {size_t(1), size_t(20), size_t(33)})
      for (bool transposed : {false, true}) {
        std::vector<uint16_t> got(2 * 32 * 64 * 2, 0xBEEF);
        if (transposed)
          dpt::gemm::pack_amx_a_cols(dpt::gemm::Operand{t.data(), ld, true}, 1, m, 3, kc, got.data());
        else
          dpt::gemm::pack_amx_a_rows(op, 1, m, 3, kc, got.data());
        const size_t kp = (kc + 31) / 32 * 32;
        size_t at = 0;
        for (size_t i = 0; i < m; i += 32)
          for (size_t kb = 0; kb < kp; kb += 32)
            for (size_t r = 0; r < 32; ++r)
              for (size_t kk = 0; kk < 32; ++kk, ++at) {
                const float v = i + r < m && kb + kk < kc ? x[(1 + i + r) * ld + 3 + kb + kk] : 0.0f;
                if (got[at] != dpt::to_bf16(v))
                  fail_msg("AMX A panel%s: element %zu is %04x, to_bf16 gives %04x",
                           transposed ? " (transposed)" : "", at, got[at], dpt::to_bf16(v));
              }
      }
  }
}

}  // namespace

int main() {
  std::printf("default kernels: fp32 %s, bf16 %s, fp16 %s\n",
              dpt::gemm::kernel_name(dpt::gemm::kernel(Precision::kF32)),
              dpt::gemm::kernel_name(dpt::gemm::kernel(Precision::kBF16)),
              dpt::gemm::kernel_name(dpt::gemm::kernel(Precision::kF16)));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bf16_rounding),
      cmocka_unit_test(test_f16_rounding),
      cmocka_unit_test(test_avx512_packers_equal_portable),
      cmocka_unit_test(test_against_float64),
      cmocka_unit_test(test_avx512_equals_portable),
      cmocka_unit_test(test_columns_do_not_depend_on_their_neighbours),
      cmocka_unit_test(test_packed_a_equals_gemm),
      cmocka_unit_test(test_bf16_operands_equal_their_float32_values),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
