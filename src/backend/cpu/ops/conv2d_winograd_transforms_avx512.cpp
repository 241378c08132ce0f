// The transforms in AVX-512, 16 kernels or 16 tiles of a row at a time: the portable loops' operations in
// their order, on vectors; narrow planes (at most 7 tiles a row) go to conv2d_winograd_narrow_avx512.cpp,
// which fills the lanes with the tile rows of several planes. A row's even and odd columns go to separate
// lanes (a tile's columns 2t .. 2t + 3 are then lanes t and t + 1 of the even and odd halves: the second pair
// is the same halves read one float later). Loads past a plane's edge are masked to zeros, as the portable
// loops' zero border; stores past it are masked off.
#include <algorithm>
#include <cstdint>

#include "backend/cpu/gemm/cpu_features.hpp"
#include "backend/cpu/ops/conv2d_winograd_avx512.hpp"

namespace dpt::cpu::winograd {

namespace {

using namespace avx512;

// Float j of the 16 kernels from `first` (fewer at the end: the lanes past them hold anything), lane b
// kernel first + b: the kernels' 144 floats loaded whole, then moved into lanes by permutations of
// consecutive pairs of their nine vectors (the index 9b + j mod 32 picks within a pair; lane b takes the pair
// holding its float). Nine gathers per 16 kernels took 1.75x as long on Zen 4 (performance-notes, 16).
DPT_AVX512 inline void kernel_floats(const float *w, size_t first, size_t count, __m512 (&g)[9]) {
  __m512 r[10];
  const size_t floats = 9 * count;
  for (size_t i = 0; i < 9; ++i)
    r[i] = floats > kLanes * i
               ? _mm512_maskz_loadu_ps(first_lanes(floats - kLanes * i), w + 9 * first + kLanes * i)
               : _mm512_setzero_ps();
  r[9] = _mm512_setzero_ps();
  const __m512i nine_apart = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(9));
  for (size_t j = 0; j < 9; ++j) {
    const __m512i index = _mm512_add_epi32(nine_apart, _mm512_set1_epi32(int(j)));
    // (The zero-masked form: GCC 12's unmasked shift reads an "undefined" register that -O1 builds, the
    // sanitizers', warn about.)
    const __m512i pair = _mm512_maskz_srli_epi32(__mmask16(0xFFFF), index, 5);
    g[j] = _mm512_permutex2var_ps(r[0], index, r[1]);
    for (int k = 1; k < 5; ++k)
      g[j] = _mm512_mask_mov_ps(g[j], _mm512_cmpeq_epi32_mask(pair, _mm512_set1_epi32(k)),
                                _mm512_permutex2var_ps(r[2 * k], index, r[2 * k + 1]));
  }
}

// U = G g G^T for 16 kernels at once, lane b kernel first + b.
DPT_AVX512 void weights(size_t kernels, const float *w, float *u, size_t stride) {
  for (size_t first = 0; first < kernels; first += kLanes) {
    const __mmask16 lanes = first_lanes(kernels - first);
    __m512 g[9];
    kernel_floats(w, first, std::min(kLanes, kernels - first), g);
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

// The inverse of kernel_floats' move: float f of 16 kernels' 144 (kernel b = f / 9, its float e = f % 9)
// comes from lane b of vector e, picked by a permutation of the pair of vectors holding e and blended in.
struct FlatFloats {
  alignas(64) int32_t index[9][kLanes];  // vector i of the 144 floats: lane b + 16 (e % 2) of pair e / 2
  uint16_t pair[9][5];                   // the lanes each pair supplies
};

const FlatFloats &flat_floats() {
  static const FlatFloats table = [] {
    FlatFloats t{};
    for (size_t f = 0; f < 9 * kLanes; ++f) {
      const size_t e = f % 9, b = f / 9;
      t.index[f / kLanes][f % kLanes] = int32_t(b + kLanes * (e % 2));
      t.pair[f / kLanes][e / 2] = uint16_t(t.pair[f / kLanes][e / 2] | 1u << (f % kLanes));
    }
    return t;
  }();
  return table;
}

// dW += G^T dU G for 16 kernels at once: the 9 sums of each kernel moved back into the kernels' order and
// added to dW a vector at a time (each float of dW takes one addition, as in the portable loop).
DPT_AVX512 void weight_gradient(size_t kernels, const float *du, size_t stride, float *dw) {
  const FlatFloats &flat = flat_floats();
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
    __m512 sums[10];
    for (size_t i = 0; i < 3; ++i) {
      sums[3 * i + 0] = add(t[i][0], half_of(add(t[i][1], t[i][2])));
      sums[3 * i + 1] = half_of(sub(t[i][1], t[i][2]));
      sums[3 * i + 2] = add(half_of(add(t[i][1], t[i][2])), t[i][3]);
    }
    sums[9] = _mm512_setzero_ps();
    float *out = dw + 9 * first;
    for (size_t i = 0; i < 9 && kLanes * i < 9 * count; ++i) {
      const __m512i index = _mm512_load_si512(flat.index[i]);
      __m512 v = _mm512_permutex2var_ps(sums[0], index, sums[1]);
      for (size_t k = 1; k < 5; ++k)
        v = _mm512_mask_mov_ps(v, flat.pair[i][k],
                               _mm512_permutex2var_ps(sums[2 * k], index, sums[2 * k + 1]));
      const __mmask16 floats = first_lanes(9 * count - kLanes * i);
      _mm512_mask_storeu_ps(out + kLanes * i, floats,
                            add(_mm512_maskz_loadu_ps(floats, out + kLanes * i), v));
    }
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
  __m512 c0[4], c1[4], c2[4], c3[4];
  for (size_t r = 0; r < 4; ++r) {
    const float *e = even + (2 * ty + r) * n + k, *o = odd + (2 * ty + r) * n + k;
    c0[r] = _mm512_loadu_ps(e);
    c1[r] = _mm512_loadu_ps(o);
    c2[r] = _mm512_loadu_ps(e + 1);
    c3[r] = _mm512_loadu_ps(o + 1);
  }
  input_points_of(c0, c1, c2, c3, q);
}

DPT_AVX512 void input_plane(const Plane &s, const float *x, float *v, size_t stride, float *rows) {
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

DPT_AVX512_BF16 void input_bf16_plane(const Plane &s, const float *x, uint16_t *v, size_t stride,
                                      float *rows) {
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

DPT_AVX512 void output_plane(const Plane &s, const float *m, size_t stride, float bias, float *y, float *) {
  const size_t tiles_x = s.tiles_x();
  const __m512 b = _mm512_set1_ps(bias);
  for (size_t ty = 0; ty < s.tiles_y(); ++ty) {
    for (size_t k = 0; k < tiles_x; k += kLanes) {
      const __mmask16 tiles = first_lanes(tiles_x - k);
      __m512 q[kPoints];
      load_points(m + ty * tiles_x + k, stride, tiles, q);
      const OutputRows o = output_rows_of(q, b);
      float *row = y + 2 * ty * s.w;
      store_row(row, 2 * k, s.w, interleave_low(o.left0, o.right0));
      store_row(row, 2 * k + kLanes, s.w, interleave_high(o.left0, o.right0));
      if (2 * ty + 1 < s.h) {
        store_row(row + s.w, 2 * k, s.w, interleave_low(o.left1, o.right1));
        store_row(row + s.w, 2 * k + kLanes, s.w, interleave_high(o.left1, o.right1));
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
  output_gradient_points_of(even_of(lo0, hi0), odd_of(lo0, hi0), even_of(lo1, hi1), odd_of(lo1, hi1), q);
}

DPT_AVX512 void output_gradient_plane(const Plane &s, const float *dy, float *m, size_t stride, float *) {
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

DPT_AVX512_BF16 void output_gradient_bf16_plane(const Plane &s, const float *dy, uint16_t *m, size_t stride,
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
DPT_AVX512 void input_gradient_plane(const Plane &s, const float *v, size_t stride, float *dx, float *rows) {
  const size_t n = split_row_floats(s), tiles_x = s.tiles_x();
  float *even = rows, *odd = rows + s.padded_h() * n;
  for (size_t i = 0; i < 2 * s.padded_h() * n; i += kLanes) _mm512_storeu_ps(rows + i, _mm512_setzero_ps());
  for (size_t ty = 0; ty < s.tiles_y(); ++ty) {
    for (size_t k = 0; k < tiles_x; k += kLanes) {
      const __mmask16 tiles = first_lanes(tiles_x - k);
      __m512 q[kPoints];
      load_points(v + ty * tiles_x + k, stride, tiles, q);
      __m512 h[4][4];  // B dV
      input_gradient_rows_of(q, h);
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

// The transforms' entries: narrow planes together, wide ones one after another.
DPT_AVX512 void input(const Plane &s, Planes planes, const float *x, float *v, size_t stride, float *rows) {
  if (narrow(s)) return input_narrow(s, planes, x, v, stride);
  for (size_t i = 0; i < planes.count; ++i)
    input_plane(s, x + i * planes.apart, v + i * s.tiles(), stride, rows);
}

DPT_AVX512_BF16 void input_bf16(const Plane &s, Planes planes, const float *x, uint16_t *v, size_t stride,
                                float *rows) {
  if (narrow(s)) return input_bf16_narrow(s, planes, x, v, stride);
  for (size_t i = 0; i < planes.count; ++i)
    input_bf16_plane(s, x + i * planes.apart, v + i * s.tiles(), stride, rows);
}

DPT_AVX512 void output(const Plane &s, Planes planes, const float *m, size_t stride, float bias, float *y,
                       float *rows) {
  if (narrow(s)) return output_narrow(s, planes, m, stride, bias, y);
  for (size_t i = 0; i < planes.count; ++i)
    output_plane(s, m + i * s.tiles(), stride, bias, y + i * planes.apart, rows);
}

DPT_AVX512 void output_gradient(const Plane &s, Planes planes, const float *dy, float *m, size_t stride,
                                float *rows) {
  if (narrow(s)) return output_gradient_narrow(s, planes, dy, m, stride);
  for (size_t i = 0; i < planes.count; ++i)
    output_gradient_plane(s, dy + i * planes.apart, m + i * s.tiles(), stride, rows);
}

DPT_AVX512_BF16 void output_gradient_bf16(const Plane &s, Planes planes, const float *dy, uint16_t *m,
                                          size_t stride, float *rows) {
  if (narrow(s)) return output_gradient_bf16_narrow(s, planes, dy, m, stride);
  for (size_t i = 0; i < planes.count; ++i)
    output_gradient_bf16_plane(s, dy + i * planes.apart, m + i * s.tiles(), stride, rows);
}

DPT_AVX512 void input_gradient(const Plane &s, Planes planes, const float *v, size_t stride, float *dx,
                               float *rows) {
  if (narrow(s)) return input_gradient_narrow(s, planes, v, stride, dx, rows);
  for (size_t i = 0; i < planes.count; ++i)
    input_gradient_plane(s, v + i * s.tiles(), stride, dx + i * planes.apart, rows);
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
