// The transforms in AVX-512, 16 kernels or 16 tiles of a row at a time: the portable loops' operations in
// their order, on vectors. A row's even and odd columns go to separate lanes (a tile's columns 2t .. 2t + 3
// are then lanes t and t + 1 of the even and odd halves: the second pair is the same halves read one float
// later). Loads past a plane's edge are masked to zeros, as the portable loops' zero border; stores past it
// are masked off.
#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/gemm/cpu_features.hpp"
#include "backend/cpu/ops/conv2d_winograd_transforms.hpp"

#define DPT_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))
// The transforms that write bfloat16 (a bf16 GEMM's operands), where the CPU has AVX512_BF16.
#define DPT_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")))

namespace dpt::cpu::winograd {

namespace {

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

// U = G g G^T for 16 kernels at once, lane b kernel first + b (its 9 floats gathered 9 apart).
DPT_AVX512 void weights(size_t kernels, const float *w, float *u, size_t stride) {
  const __m512i nine_apart = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(9));
  for (size_t first = 0; first < kernels; first += kLanes) {
    const __mmask16 lanes = first_lanes(kernels - first);
    __m512 g[9];
    for (size_t j = 0; j < 9; ++j)
      g[j] = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), lanes, nine_apart, w + 9 * first + j, 4);
    __m512 t[4][3];  // G g
    for (size_t j = 0; j < 3; ++j) {
      t[0][j] = g[j];
      t[1][j] = half_of(add(add(g[j], g[3 + j]), g[6 + j]));
      t[2][j] = half_of(add(sub(g[j], g[3 + j]), g[6 + j]));
      t[3][j] = g[6 + j];
    }
    float *uk = u + first;
    for (size_t i = 0; i < 4; ++i) {
      _mm512_mask_storeu_ps(uk + (4 * i + 0) * stride, lanes, t[i][0]);
      _mm512_mask_storeu_ps(uk + (4 * i + 1) * stride, lanes, half_of(add(add(t[i][0], t[i][1]), t[i][2])));
      _mm512_mask_storeu_ps(uk + (4 * i + 2) * stride, lanes, half_of(add(sub(t[i][0], t[i][1]), t[i][2])));
      _mm512_mask_storeu_ps(uk + (4 * i + 3) * stride, lanes, t[i][2]);
    }
  }
}

// dW += G^T dU G for 16 kernels at once; the 9 sums of each kernel then added to dW one by one.
DPT_AVX512 void weight_gradient(size_t kernels, const float *du, size_t stride, float *dw) {
  alignas(64) float sums[9][kLanes];
  for (size_t first = 0; first < kernels; first += kLanes) {
    const size_t count = kernels - first < kLanes ? kernels - first : kLanes;
    const __mmask16 lanes = first_lanes(count);
    __m512 d[kPoints];
    for (size_t p = 0; p < kPoints; ++p) d[p] = _mm512_maskz_loadu_ps(lanes, du + p * stride + first);
    __m512 t[3][4];  // G^T dU
    for (size_t j = 0; j < 4; ++j) {
      t[0][j] = add(d[j], half_of(add(d[4 + j], d[8 + j])));
      t[1][j] = half_of(sub(d[4 + j], d[8 + j]));
      t[2][j] = add(half_of(add(d[4 + j], d[8 + j])), d[12 + j]);
    }
    for (size_t i = 0; i < 3; ++i) {
      _mm512_store_ps(sums[3 * i + 0], add(t[i][0], half_of(add(t[i][1], t[i][2]))));
      _mm512_store_ps(sums[3 * i + 1], half_of(sub(t[i][1], t[i][2])));
      _mm512_store_ps(sums[3 * i + 2], add(half_of(add(t[i][1], t[i][2])), t[i][3]));
    }
    for (size_t b = 0; b < count; ++b)
      for (size_t e = 0; e < 9; ++e) dw[9 * (first + b) + e] += sums[e][b];
  }
}

// The zero-bordered plane of x, each padded row r split: even[r * n + k] = column 2k, odd[...] = 2k + 1
// (n = split_row_floats). Padded column c is the image's column c - 1.
DPT_AVX512 void split_plane(const Plane &s, const float *x, float *even, float *odd) {
  const size_t n = split_row_floats(s);
  for (size_t r = 0; r < s.padded_h(); ++r) {
    float *e = even + r * n, *o = odd + r * n;
    if (r == 0 || r > s.h) {
      for (size_t k = 0; k < n; k += kLanes) {
        _mm512_storeu_ps(e + k, _mm512_setzero_ps());
        _mm512_storeu_ps(o + k, _mm512_setzero_ps());
      }
      continue;
    }
    const float *row = x + (r - 1) * s.w;
    e[0] = 0.0f;
    for (size_t k = 0; k < n; k += kLanes) {
      const __m512 lo = load_row(row, 2 * k, s.w), hi = load_row(row, 2 * k + kLanes, s.w);
      _mm512_storeu_ps(o + k, even_of(lo, hi));  // image column 2k is padded column 2k + 1
      _mm512_mask_storeu_ps(e + k + 1, first_lanes(n - k - 1), odd_of(lo, hi));
    }
  }
}

// The 16 points q of the 16 tiles from k of tile row ty (the split plane's rows from 2 ty).
DPT_AVX512 inline void input_points(const float *even, const float *odd, size_t n, size_t ty, size_t k,
                                    __m512 (&q)[kPoints]) {
  // Columns 0 .. 3 of the tiles' patches (e0 e1 e2 e3 of the portable loop) in four rows.
  __m512 c0[4], c1[4], c2[4], c3[4];
  for (size_t r = 0; r < 4; ++r) {
    const float *e = even + (2 * ty + r) * n + k, *o = odd + (2 * ty + r) * n + k;
    c0[r] = _mm512_loadu_ps(e);
    c1[r] = _mm512_loadu_ps(o);
    c2[r] = _mm512_loadu_ps(e + 1);
    c3[r] = _mm512_loadu_ps(o + 1);
  }
  for (size_t a = 0; a < 4; ++a) {
    const __m512 e0 = bt_row(c0, a), e1 = bt_row(c1, a), e2 = bt_row(c2, a), e3 = bt_row(c3, a);
    q[4 * a + 0] = sub(e0, e2);
    q[4 * a + 1] = add(e1, e2);
    q[4 * a + 2] = sub(e2, e1);
    q[4 * a + 3] = sub(e1, e3);
  }
}

DPT_AVX512 void input(const Plane &s, const float *x, float *v, size_t stride, float *rows) {
  const size_t n = split_row_floats(s), tiles_x = s.tiles_x();
  float *even = rows, *odd = rows + s.padded_h() * n;
  split_plane(s, x, even, odd);
  for (size_t ty = 0; ty < s.tiles_y(); ++ty)
    for (size_t k = 0; k < tiles_x; k += kLanes) {
      __m512 q[kPoints];
      input_points(even, odd, n, ty, k, q);
      const __mmask16 tiles = first_lanes(tiles_x - k);
      for (size_t p = 0; p < kPoints; ++p)
        _mm512_mask_storeu_ps(v + p * stride + ty * tiles_x + k, tiles, q[p]);
    }
}

// x rounded to bfloat16 (VCVTNEPS2BF16: core/float16.hpp's to_bf16) into the lanes of `tiles` at to.
DPT_AVX512_BF16 inline void store_bf16(uint16_t *to, __mmask16 tiles, __m512 x) {
  _mm256_mask_storeu_epi16(to, tiles, (__m256i)_mm512_cvtneps_pbh(x));
}

DPT_AVX512_BF16 void input_bf16(const Plane &s, const float *x, uint16_t *v, size_t stride, float *rows) {
  const size_t n = split_row_floats(s), tiles_x = s.tiles_x();
  float *even = rows, *odd = rows + s.padded_h() * n;
  split_plane(s, x, even, odd);
  for (size_t ty = 0; ty < s.tiles_y(); ++ty)
    for (size_t k = 0; k < tiles_x; k += kLanes) {
      __m512 q[kPoints];
      input_points(even, odd, n, ty, k, q);
      const __mmask16 tiles = first_lanes(tiles_x - k);
      for (size_t p = 0; p < kPoints; ++p) store_bf16(v + p * stride + ty * tiles_x + k, tiles, q[p]);
    }
}

DPT_AVX512 void output(const Plane &s, const float *m, size_t stride, float bias, float *y, float *) {
  const size_t tiles_x = s.tiles_x();
  const __m512 b = _mm512_set1_ps(bias);
  for (size_t ty = 0; ty < s.tiles_y(); ++ty) {
    for (size_t k = 0; k < tiles_x; k += kLanes) {
      const __mmask16 tiles = first_lanes(tiles_x - k);
      __m512 q[kPoints];
      load_points(m + ty * tiles_x + k, stride, tiles, q);
      __m512 r0[4], r1[4];  // A^T M
      for (size_t j = 0; j < 4; ++j) {
        r0[j] = add(add(q[j], q[4 + j]), q[8 + j]);
        r1[j] = sub(sub(q[4 + j], q[8 + j]), q[12 + j]);
      }
      const __m512 left0 = add(b, add(add(r0[0], r0[1]), r0[2])),
                   right0 = add(b, sub(sub(r0[1], r0[2]), r0[3]));
      float *row = y + 2 * ty * s.w;
      store_row(row, 2 * k, s.w, interleave_low(left0, right0));
      store_row(row, 2 * k + kLanes, s.w, interleave_high(left0, right0));
      if (2 * ty + 1 < s.h) {
        const __m512 left1 = add(b, add(add(r1[0], r1[1]), r1[2]));
        const __m512 right1 = add(b, sub(sub(r1[1], r1[2]), r1[3]));
        store_row(row + s.w, 2 * k, s.w, interleave_low(left1, right1));
        store_row(row + s.w, 2 * k + kLanes, s.w, interleave_high(left1, right1));
      }
    }
  }
}

// The 16 points q of dM for the 16 tiles from k of tile row ty of the output-gradient plane dy.
DPT_AVX512 inline void output_gradient_points(const Plane &s, const float *dy, size_t ty, size_t k,
                                              __m512 (&q)[kPoints]) {
  const float *g0 = dy + 2 * ty * s.w, *g1 = g0 + s.w;
  const bool second_row = 2 * ty + 1 < s.h;
  const __m512 lo0 = load_row(g0, 2 * k, s.w), hi0 = load_row(g0, 2 * k + kLanes, s.w);
  const __m512 lo1 = second_row ? load_row(g1, 2 * k, s.w) : _mm512_setzero_ps();
  const __m512 hi1 = second_row ? load_row(g1, 2 * k + kLanes, s.w) : _mm512_setzero_ps();
  const __m512 a0 = even_of(lo0, hi0), a1 = odd_of(lo0, hi0), b0 = even_of(lo1, hi1), b1 = odd_of(lo1, hi1);
  const __m512 x0[4] = {a0, add(a0, b0), sub(a0, b0), negate(b0)};
  const __m512 x1[4] = {a1, add(a1, b1), sub(a1, b1), negate(b1)};
  for (size_t r = 0; r < 4; ++r) {
    q[4 * r + 0] = x0[r];
    q[4 * r + 1] = add(x0[r], x1[r]);
    q[4 * r + 2] = sub(x0[r], x1[r]);
    q[4 * r + 3] = negate(x1[r]);
  }
}

DPT_AVX512 void output_gradient(const Plane &s, const float *dy, float *m, size_t stride, float *) {
  const size_t tiles_x = s.tiles_x();
  for (size_t ty = 0; ty < s.tiles_y(); ++ty)
    for (size_t k = 0; k < tiles_x; k += kLanes) {
      __m512 q[kPoints];
      output_gradient_points(s, dy, ty, k, q);
      const __mmask16 tiles = first_lanes(tiles_x - k);
      for (size_t p = 0; p < kPoints; ++p)
        _mm512_mask_storeu_ps(m + p * stride + ty * tiles_x + k, tiles, q[p]);
    }
}

DPT_AVX512_BF16 void output_gradient_bf16(const Plane &s, const float *dy, uint16_t *m, size_t stride,
                                          float *) {
  const size_t tiles_x = s.tiles_x();
  for (size_t ty = 0; ty < s.tiles_y(); ++ty)
    for (size_t k = 0; k < tiles_x; k += kLanes) {
      __m512 q[kPoints];
      output_gradient_points(s, dy, ty, k, q);
      const __mmask16 tiles = first_lanes(tiles_x - k);
      for (size_t p = 0; p < kPoints; ++p) store_bf16(m + p * stride + ty * tiles_x + k, tiles, q[p]);
    }
}

// p[0 .. 15] op= x in the lanes of `tiles`.
DPT_AVX512 inline void add_to(float *p, __mmask16 tiles, __m512 x) {
  _mm512_mask_storeu_ps(p, tiles, add(_mm512_loadu_ps(p), x));
}
DPT_AVX512 inline void sub_from(float *p, __mmask16 tiles, __m512 x) {
  _mm512_mask_storeu_ps(p, tiles, sub(_mm512_loadu_ps(p), x));
}

// The patches accumulate in a zero-bordered plane split as split_plane's. A padded column 2k takes tile
// k - 1's third column, then tile k's first; 2k + 1 tile k - 1's fourth, then tile k's second: the order of
// the portable loop, which goes through the tiles one after another.
DPT_AVX512 void input_gradient(const Plane &s, const float *v, size_t stride, float *dx, float *rows) {
  const size_t n = split_row_floats(s), tiles_x = s.tiles_x();
  float *even = rows, *odd = rows + s.padded_h() * n;
  for (size_t i = 0; i < 2 * s.padded_h() * n; i += kLanes) _mm512_storeu_ps(rows + i, _mm512_setzero_ps());
  for (size_t ty = 0; ty < s.tiles_y(); ++ty) {
    for (size_t k = 0; k < tiles_x; k += kLanes) {
      const __mmask16 tiles = first_lanes(tiles_x - k);
      __m512 q[kPoints];
      load_points(v + ty * tiles_x + k, stride, tiles, q);
      __m512 h[4][4];  // B dV
      for (size_t j = 0; j < 4; ++j) {
        h[0][j] = q[j];
        h[1][j] = add(sub(q[4 + j], q[8 + j]), q[12 + j]);
        h[2][j] = sub(add(q[4 + j], q[8 + j]), q[j]);
        h[3][j] = negate(q[12 + j]);
      }
      for (size_t i = 0; i < 4; ++i) {
        float *e = even + (2 * ty + i) * n + k, *o = odd + (2 * ty + i) * n + k;
        add_to(e + 1, tiles, sub(add(h[i][1], h[i][2]), h[i][0]));
        sub_from(o + 1, tiles, h[i][3]);
        add_to(e, tiles, h[i][0]);
        add_to(o, tiles, add(sub(h[i][1], h[i][2]), h[i][3]));
      }
    }
  }
  // dx's column 2j is padded column 2j + 1 (odd[j]), its column 2j + 1 padded column 2j + 2 (even[j + 1]).
  for (size_t y = 0; y < s.h; ++y) {
    const float *e = even + (y + 1) * n, *o = odd + (y + 1) * n;
    float *row = dx + y * s.w;
    for (size_t j = 0; 2 * j < s.w; j += kLanes) {
      const __m512 left = _mm512_loadu_ps(o + j), right = _mm512_loadu_ps(e + j + 1);
      store_row(row, 2 * j, s.w, interleave_low(left, right));
      store_row(row, 2 * j + kLanes, s.w, interleave_high(left, right));
    }
  }
}

}  // namespace

const Transforms *avx512_transforms() {
  static const Transforms t{weights,         weight_gradient, input,   output,
                            output_gradient, input_gradient,  nullptr, nullptr};
  static const Transforms with_bf16{weights,         weight_gradient, input,      output,
                                    output_gradient, input_gradient,  input_bf16, output_gradient_bf16};
  const gemm::CpuFeatures &f = gemm::cpu_features();
  return !f.avx512 ? nullptr : f.avx512_bf16 ? &with_bf16 : &t;
}

}  // namespace dpt::cpu::winograd
