// Winograd's transforms (src/backend/cpu/ops/conv2d_winograd_transforms.hpp): the AVX-512 ones bit for bit
// against the portable loops, over kernel counts around multiples of 16 and plane sizes odd and even, from
// one tile to several chunks of 16 tiles a row, 1, 3 and 10 planes a call (narrow planes, up to 7 tiles a
// row, share vectors across tile rows and planes), on values with signed zeros, subnormals and infinities
// (NaNs compared as NaNs: a compiler may swap the operands of an addition, which decides which of two NaNs
// comes out). The output buffers are strided like the convolution's, with guard floats between the points'
// runs, between the planes and after the last: what either implementation writes outside its tiles shows up
// as a difference there.
// Reported as not run where the CPU has no AVX-512.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include <immintrin.h>

#include <algorithm>

#include "backend/cpu/ops/conv2d_winograd_avx512.hpp"
#include "backend/cpu/ops/conv2d_winograd_transforms.hpp"
#include "core/float16.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
extern "C" {
#include <cmocka.h>
}

#include "core_test_util.hpp"

namespace {

using dpt::cpu::winograd::Plane;
using dpt::cpu::winograd::Planes;
using dpt::cpu::winograd::Transforms;

constexpr size_t kPoints = 16;
constexpr size_t kGuard = 37;  // floats after each point's run and after each plane
const float kSentinel = 12345.0f;

// Mostly ordinary values, with zeros of both signs, subnormals, infinities and a NaN among them.
std::vector<float> values(size_t count, uint64_t seed) {
  dpt_test::TestRng rng(seed);
  std::vector<float> v(count);
  for (float &x : v) {
    const size_t kind = rng.below(40);
    x = kind == 0   ? 0.0f
        : kind == 1 ? -0.0f
        : kind == 2 ? std::numeric_limits<float>::denorm_min() * float(1 + rng.below(1000))
        : kind == 3 ? -std::numeric_limits<float>::infinity()
        : kind == 4 ? std::numeric_limits<float>::infinity()
        : kind == 5 ? std::numeric_limits<float>::quiet_NaN()
                    : rng.uniform(-4.0f, 4.0f);
  }
  return v;
}

bool same(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

// The first index where the two differ, or SIZE_MAX.
size_t first_difference(const std::vector<float> &a, const std::vector<float> &b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (!same(a[i], b[i])) return i;
  return SIZE_MAX;
}

struct Outcome {
  std::vector<float> v, y, m, dx;
};

// Every transform of `count` planes of shape s (each kGap floats after the previous one's end) through t, on
// inputs made from seed.
constexpr size_t kGap = 3;

Outcome run(const Transforms &t, const Plane &s, size_t count, uint64_t seed) {
  const size_t stride = count * s.tiles() + kGuard, points = kPoints * stride, apart = s.size() + kGap;
  const Planes planes{count, apart};
  std::vector<float> rows(dpt::cpu::winograd::plane_rows_floats(s, count),
                          std::numeric_limits<float>::quiet_NaN());
  const std::vector<float> x = values(count * apart, seed), m_in = values(points, seed + 1),
                           dy = values(count * apart, seed + 2), dv = values(points, seed + 3);
  const float bias = values(1, seed + 4)[0];
  Outcome o;
  o.v.assign(points, kSentinel);
  t.input(s, planes, x.data(), o.v.data(), stride, rows.data());
  o.y.assign(count * apart + kGuard, kSentinel);
  t.output(s, planes, m_in.data(), stride, bias, o.y.data(), rows.data());
  o.m.assign(points, kSentinel);
  t.output_gradient(s, planes, dy.data(), o.m.data(), stride, rows.data());
  o.dx.assign(count * apart + kGuard, kSentinel);
  t.input_gradient(s, planes, dv.data(), stride, o.dx.data(), rows.data());
  return o;
}

// The AVX-512 transforms (the test is skipped without them) and the portable ones.
const Transforms &fast_transforms() {
  const Transforms *fast = dpt::cpu::winograd::avx512_transforms();
  if (fast == nullptr) {
    std::printf("no AVX-512 on this CPU: not run\n");
    skip();
  }
  assert_ptr_equal(&dpt::cpu::winograd::transforms(), fast);  // what the convolution runs
  return *fast;
}

struct WeightOutcome {
  std::vector<float> u, dw;
};

WeightOutcome run_weights(const Transforms &t, size_t kernels, uint64_t seed) {
  const size_t stride = kernels + kGuard;
  const std::vector<float> w = values(9 * kernels, seed), du = values(kPoints * stride, seed + 1);
  WeightOutcome o;
  o.u.assign(kPoints * stride, kSentinel);
  t.weights(kernels, w.data(), o.u.data(), stride);
  o.dw = values(9 * kernels + kGuard, seed + 2);  // what the gradient adds to
  t.weight_gradient(kernels, du.data(), stride, o.dw.data());
  return o;
}

void test_avx512_weights_match_portable(void **) {
  const Transforms &fast = fast_transforms(), &reference = dpt::cpu::winograd::portable_transforms();
  for (size_t kernels : {1, 2, 15, 16, 17, 31, 33, 64, 65, 100, 4099}) {
    const WeightOutcome want = run_weights(reference, kernels, kernels),
                        got = run_weights(fast, kernels, kernels);
    for (const auto &[name, pair] : {std::make_pair("weights", std::make_pair(&want.u, &got.u)),
                                     std::make_pair("weight_gradient", std::make_pair(&want.dw, &got.dw))}) {
      const size_t at = first_difference(*pair.first, *pair.second);
      if (at != SIZE_MAX)
        fail_msg("%s of %zu kernels: float %zu is %.9g, the portable loops' %.9g", name, kernels, at,
                 double((*pair.second)[at]), double((*pair.first)[at]));
    }
  }
}

void test_avx512_tiles_match_portable(void **) {
  const Transforms &fast = fast_transforms(), &reference = dpt::cpu::winograd::portable_transforms();
  std::vector<size_t> sizes;
  for (size_t n = 1; n <= 9; ++n) sizes.push_back(n);
  for (size_t n : {12, 14, 28, 31, 32, 33, 34, 63, 66}) sizes.push_back(n);
  size_t planes = 0;
  for (size_t count : {1, 3, 10})
    for (size_t h : sizes)
      for (size_t w : sizes) {
        const Plane s{h, w};
        const uint64_t seed = 1000 * h + w + 100000 * count;
        const Outcome want = run(reference, s, count, seed), got = run(fast, s, count, seed);
        const std::pair<const char *, std::pair<const std::vector<float> *, const std::vector<float> *>>
            outputs[] = {{"input", {&want.v, &got.v}},
                         {"output", {&want.y, &got.y}},
                         {"output_gradient", {&want.m, &got.m}},
                         {"input_gradient", {&want.dx, &got.dx}}};
        for (const auto &[name, pair] : outputs) {
          const size_t at = first_difference(*pair.first, *pair.second);
          if (at != SIZE_MAX)
            fail_msg("%s of %zu %zu x %zu planes: float %zu is %.9g, the portable loops' %.9g", name, count,
                     h, w, at, double((*pair.second)[at]), double((*pair.first)[at]));
        }
        planes += count;
      }
  std::printf("%zu planes, the same bits\n", planes);
}

bool same_bf16(uint16_t a, uint16_t b) {
  const auto nan = [](uint16_t x) { return (x & 0x7F80) == 0x7F80 && (x & 0x7F) != 0; };
  return a == b || (nan(a) && nan(b));
}

// The bfloat16 store of those transforms (store_bf16: AVX512_BF16's VCVTNEPS2BF16) gives to_bf16's bits,
// NaN payloads included, on 2^26 bit patterns spread over all of float32 and on the edges (signed zeros,
// subnormals, the largest finite values, infinities, NaNs, ties to even both ways, a tie that rounds to
// infinity), with masks of every lane count: the lanes outside the mask keep what they held. (On AMD the
// dot-product instruction's bits are not Intel's, test_gemm; the conversion's are checked here.)
DPT_AVX512_BF16 size_t check_store_bf16(const std::vector<uint32_t> &bits) {
  size_t wrong = 0;
  for (size_t i = 0; i + 16 <= bits.size(); i += 16) {
    float x[16];
    std::memcpy(x, &bits[i], sizeof x);
    uint16_t got[16];
    std::fill(got, got + 16, uint16_t(0x5A5A));
    const size_t lanes = i / 16 % 17;
    dpt::cpu::winograd::avx512::store_bf16(got, dpt::cpu::winograd::avx512::first_lanes(lanes),
                                           _mm512_loadu_ps(x));
    for (size_t j = 0; j < 16; ++j) wrong += got[j] != (j < lanes ? dpt::to_bf16(x[j]) : uint16_t(0x5A5A));
  }
  return wrong;
}

void test_bf16_store_rounds_as_to_bf16(void **) {
  if (fast_transforms().input_bf16 == nullptr) {
    std::printf("no AVX512_BF16 on this CPU: not run\n");
    skip();
  }
  std::vector<uint32_t> bits = {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x00800000u, 0x80800000u,
                                0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F7F7FFFu, 0x7F7F8000u, 0x7F800000u, 0xFF800000u,
                                0x7F800001u, 0xFF800001u, 0x7FC00000u, 0xFFFFFFFFu, 0x3F808000u, 0x3F818000u,
                                0x3F807FFFu, 0x3F808001u, 0x007F8000u, 0x00FF8000u, 0xBF808000u, 0xBF818000u};
  while (bits.size() % 16 != 0) bits.push_back(0x3F800000u);
  const size_t specials = bits.size();
  for (uint64_t i = 0; i < (uint64_t(1) << 26); ++i)
    bits.push_back(uint32_t(i * 64 + (i * 2654435761u) % 64));
  const size_t wrong = check_store_bf16(bits);
  if (wrong != 0) fail_msg("store_bf16: %zu of %zu values differ from to_bf16's", wrong, bits.size());
  std::printf("store_bf16: %zu bit patterns (%zu edge cases), to_bf16's bits, masks of 0-16 lanes\n",
              bits.size(), specials);
}

// The transforms that write bfloat16 (AVX512_BF16): each value to_bf16 of the portable loops' float32 one,
// nothing written outside the tiles (the guards keep their sentinel).
void test_bf16_tiles_match_rounded_portable(void **) {
  const Transforms &fast = fast_transforms(), &reference = dpt::cpu::winograd::portable_transforms();
  if (fast.input_bf16 == nullptr || fast.output_gradient_bf16 == nullptr) {
    std::printf("no AVX512_BF16 on this CPU: not run\n");
    skip();
  }
  const uint16_t kSentinel16 = 0x5A5A;
  size_t planes = 0;
  for (size_t count : {1, 3, 10})
    for (size_t h : {1, 2, 3, 4, 7, 14, 31, 33})
      for (size_t w : {1, 2, 4, 5, 7, 14, 32, 33, 66}) {
        const Plane s{h, w};
        const uint64_t seed = 7000 + 100 * h + w + 100000 * count;
        const size_t stride = count * s.tiles() + kGuard, points = kPoints * stride, apart = s.size() + kGap;
        const Planes run{count, apart};
        std::vector<float> rows(dpt::cpu::winograd::plane_rows_floats(s, count));
        const std::vector<float> x = values(count * apart, seed), dy = values(count * apart, seed + 1);
        std::vector<float> v(points, kSentinel), m(points, kSentinel);
        reference.input(s, run, x.data(), v.data(), stride, rows.data());
        reference.output_gradient(s, run, dy.data(), m.data(), stride, rows.data());
        std::vector<uint16_t> v16(points, kSentinel16), m16(points, kSentinel16);
        fast.input_bf16(s, run, x.data(), v16.data(), stride, rows.data());
        fast.output_gradient_bf16(s, run, dy.data(), m16.data(), stride, rows.data());
        for (const auto &[name, want, got] :
             {std::make_tuple("input_bf16", &v, &v16), std::make_tuple("output_gradient_bf16", &m, &m16)})
          for (size_t i = 0; i < points; ++i) {
            const float f = (*want)[i];
            const uint16_t expected = f == kSentinel ? kSentinel16 : dpt::to_bf16(f);
            if (!same_bf16((*got)[i], expected))
              fail_msg(
                  "%s of %zu %zu x %zu planes: element %zu is 0x%04x, to_bf16 of the portable loops' 0x%04x",
                  name, count, h, w, i, unsigned((*got)[i]), unsigned(expected));
          }
        planes += count;
      }
  std::printf("%zu planes, bfloat16 outputs to_bf16 of the portable ones\n", planes);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_avx512_weights_match_portable),
      cmocka_unit_test(test_avx512_tiles_match_portable),
      cmocka_unit_test(test_bf16_store_rounds_as_to_bf16),
      cmocka_unit_test(test_bf16_tiles_match_rounded_portable),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
