// The AVX-512 Winograd transforms' vector helpers and per-tile arithmetic, shared by the wide path
// (conv2d_winograd_transforms_avx512.cpp: 16 tiles of one row a vector) and the narrow one
// (conv2d_winograd_narrow_avx512.cpp: the tile rows of several planes a vector). Every operation is the
// portable loops' (conv2d_winograd_transforms_portable.cpp), in their order.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "backend/cpu/ops/conv2d_winograd_transforms.hpp"

#define DPT_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))
// The transforms that write bfloat16 (a bf16 GEMM's operands), where the CPU has AVX512_BF16.
#define DPT_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")))

namespace dpt::cpu::winograd::avx512 {

constexpr size_t kLanes = 16;
constexpr size_t kPoints = 16;

DPT_AVX512 inline __mmask16 first_lanes(size_t n) {
  return n >= kLanes ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1u);
}

// 16 floats of a row of width w from column `from` on, zeros past w.
DPT_AVX512 inline __m512 load_row(const float *row, size_t from, size_t w) {
  return from < w ? _mm512_maskz_loadu_ps(first_lanes(w - from), row + from) : _mm512_setzero_ps();
}

DPT_AVX512 inline void store_row(float *row, size_t from, size_t w, __m512 x) {
  if (from < w) _mm512_mask_storeu_ps(row + from, first_lanes(w - from), x);
}

// The even (odd) columns of the 32 floats lo, hi.
DPT_AVX512 inline __m512 even_of(__m512 lo, __m512 hi) {
  return _mm512_permutex2var_ps(
      lo, _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30), hi);
}
DPT_AVX512 inline __m512 odd_of(__m512 lo, __m512 hi) {
  return _mm512_permutex2var_ps(
      lo, _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31), hi);
}
// The first (last) 16 floats of a, b interleaved: a0 b0 a1 b1 ...
DPT_AVX512 inline __m512 interleave_low(__m512 a, __m512 b) {
  return _mm512_permutex2var_ps(a, _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23),
                                b);
}
DPT_AVX512 inline __m512 interleave_high(__m512 a, __m512 b) {
  return _mm512_permutex2var_ps(
      a, _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31), b);
}

// -x exactly (the sign flipped, as the portable loops' unary minus; 0 - x would turn -0 into +0).
DPT_AVX512 inline __m512 negate(__m512 x) {
  return _mm512_xor_ps(x, _mm512_set1_ps(-0.0f));
}

DPT_AVX512 inline __m512 half_of(__m512 x) {
  return _mm512_mul_ps(_mm512_set1_ps(0.5f), x);
}
DPT_AVX512 inline __m512 add(__m512 a, __m512 b) {
  return _mm512_add_ps(a, b);
}
DPT_AVX512 inline __m512 sub(__m512 a, __m512 b) {
  return _mm512_sub_ps(a, b);
}

// The 16 points of the tiles at `at` (16 runs stride floats apart), zeros past the tiles.
DPT_AVX512 inline void load_points(const float *at, size_t stride, __mmask16 tiles, __m512 (&q)[kPoints]) {
  for (size_t p = 0; p < kPoints; ++p) q[p] = _mm512_maskz_loadu_ps(tiles, at + p * stride);
}

// Row a of B^T d over the four rows d0 .. d3 (B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]).
DPT_AVX512 inline __m512 bt_row(const __m512 d[4], size_t a) {
  switch (a) {
    case 0:
      return sub(d[0], d[2]);
    case 1:
      return add(d[1], d[2]);
    case 2:
      return sub(d[2], d[1]);
    default:
      return sub(d[1], d[3]);
  }
}

// The 16 points q of tiles from the columns of their patches: c0[r] .. c3[r] columns 0 .. 3 of patch row r
// (e0 e1 e2 e3 of the portable loop).
DPT_AVX512 inline void input_points_of(const __m512 c0[4], const __m512 c1[4], const __m512 c2[4],
                                       const __m512 c3[4], __m512 (&q)[kPoints]) {
  for (size_t a = 0; a < 4; ++a) {
    const __m512 e0 = bt_row(c0, a), e1 = bt_row(c1, a), e2 = bt_row(c2, a), e3 = bt_row(c3, a);
    q[4 * a + 0] = sub(e0, e2);
    q[4 * a + 1] = add(e1, e2);
    q[4 * a + 2] = sub(e2, e1);
    q[4 * a + 3] = sub(e1, e3);
  }
}

// The 16 points q of dM for tiles whose output gradients are a0 a1 (the tile's first row) and b0 b1.
DPT_AVX512 inline void output_gradient_points_of(__m512 a0, __m512 a1, __m512 b0, __m512 b1,
                                                 __m512 (&q)[kPoints]) {
  const __m512 x0[4] = {a0, add(a0, b0), sub(a0, b0), negate(b0)};
  const __m512 x1[4] = {a1, add(a1, b1), sub(a1, b1), negate(b1)};
  for (size_t r = 0; r < 4; ++r) {
    q[4 * r + 0] = x0[r];
    q[4 * r + 1] = add(x0[r], x1[r]);
    q[4 * r + 2] = sub(x0[r], x1[r]);
    q[4 * r + 3] = negate(x1[r]);
  }
}

// x rounded to bfloat16 (VCVTNEPS2BF16: core/float16.hpp's to_bf16) into the lanes of `tiles` at to.
DPT_AVX512_BF16 inline void store_bf16(uint16_t *to, __mmask16 tiles, __m512 x) {
  _mm256_mask_storeu_epi16(to, tiles, (__m256i)_mm512_cvtneps_pbh(x));
}

// y = bias + A^T M A for tiles whose 16 points are q: their output rows 0 and 1, each as the left (column
// 2t) and right (2t + 1) values.
struct OutputRows {
  __m512 left0, right0, left1, right1;
};

DPT_AVX512 inline OutputRows output_rows_of(const __m512 (&q)[kPoints], __m512 bias) {
  __m512 r0[4], r1[4];  // A^T M
  for (size_t j = 0; j < 4; ++j) {
    r0[j] = add(add(q[j], q[4 + j]), q[8 + j]);
    r1[j] = sub(sub(q[4 + j], q[8 + j]), q[12 + j]);
  }
  return OutputRows{add(bias, add(add(r0[0], r0[1]), r0[2])), add(bias, sub(sub(r0[1], r0[2]), r0[3])),
                    add(bias, add(add(r1[0], r1[1]), r1[2])), add(bias, sub(sub(r1[1], r1[2]), r1[3]))};
}

// B dV for tiles whose 16 points (of dV) are q: h[i][j], row i of the patch before the columns' B^T.
DPT_AVX512 inline void input_gradient_rows_of(const __m512 (&q)[kPoints], __m512 (&h)[4][4]) {
  for (size_t j = 0; j < 4; ++j) {
    h[0][j] = q[j];
    h[1][j] = add(sub(q[4 + j], q[8 + j]), q[12 + j]);
    h[2][j] = sub(add(q[4 + j], q[8 + j]), q[j]);
    h[3][j] = negate(q[12 + j]);
  }
}

// Narrow planes (at most kNarrowTiles tiles a row) in conv2d_winograd_narrow_avx512.cpp: the transforms of
// Transforms over all the planes of a call at once.
constexpr size_t kNarrowTiles = 7;

inline bool narrow(const Plane &s) {
  return s.tiles_x() <= kNarrowTiles;
}

DPT_AVX512 void input_narrow(const Plane &s, Planes planes, const float *x, float *v, size_t stride);
DPT_AVX512_BF16 void input_bf16_narrow(const Plane &s, Planes planes, const float *x, uint16_t *v,
                                       size_t stride);
DPT_AVX512 void output_narrow(const Plane &s, Planes planes, const float *m, size_t stride, float bias,
                              float *y);
DPT_AVX512 void output_gradient_narrow(const Plane &s, Planes planes, const float *dy, float *m,
                                       size_t stride);
DPT_AVX512_BF16 void output_gradient_bf16_narrow(const Plane &s, Planes planes, const float *dy, uint16_t *m,
                                                 size_t stride);
DPT_AVX512 void input_gradient_narrow(const Plane &s, Planes planes, const float *v, size_t stride, float *dx,
                                      float *pad);

}  // namespace dpt::cpu::winograd::avx512
