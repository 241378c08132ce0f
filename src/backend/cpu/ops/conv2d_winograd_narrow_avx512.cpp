// Winograd's transforms on narrow planes, at most kNarrowTiles tiles a row (ResNet's 14 x 14, 7 x 7 and 4 x 4
// planes on 28 x 28 images), in AVX-512: a row of tiles would fill a few of the 16 lanes (two, on a 4 x 4
// plane), so a vector takes the tile rows of several planes, "segments" one after another: segment j of a
// call is tile row j % tiles_y of plane j / tiles_y, whose tiles are columns j * tiles_x .. of V and M
// (planes side by side). The arithmetic per tile is the wide path's (conv2d_winograd_avx512.hpp), and so
// are the bits (test_winograd_transforms holds both to the portable loops).
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backend/cpu/ops/conv2d_winograd_avx512.hpp"

namespace dpt::cpu::winograd::avx512 {

namespace {

struct Segments {
  size_t width;       // tiles a row: a segment's lanes
  size_t per_vector;  // segments a vector
  size_t rows;        // tile rows a plane
  size_t count;       // segments in all
  __mmask16 lanes(size_t j) const { return __mmask16(((1u << width) - 1u) << (j * width)); }
  size_t plane(size_t segment) const { return segment / rows; }
  size_t tile_row(size_t segment) const { return segment % rows; }
};

Segments segments_of(const Plane &s, size_t planes) {
  const size_t width = s.tiles_x();
  return Segments{width, kLanes / width, s.tiles_y(), planes * s.tiles_y()};
}

// The rows of a vector's segments side by side in two registers (32 floats): segment j's row at floats
// j * 2 width .. (a row has w <= 2 width floats), zeros where no row was stacked. A permutation then moves
// every segment's columns into its lanes at once.
struct Stacked {
  __m512 lo, hi;
};

DPT_AVX512 inline Stacked no_rows() {
  return Stacked{_mm512_setzero_ps(), _mm512_setzero_ps()};
}

DPT_AVX512 inline __mmask16 lanes_between(size_t from, size_t to) {
  return __mmask16(first_lanes(to) & ~first_lanes(from));
}

// Row (w floats) as segment j's: expanding loads, which read the row's floats in order into the lanes of
// their mask (and nothing before or past it).
DPT_AVX512 inline void stack_row(Stacked &p, const Segments &g, size_t j, const float *row, size_t w) {
  const size_t at = 2 * g.width * j;
  if (at < kLanes) p.lo = _mm512_mask_expandloadu_ps(p.lo, lanes_between(at, std::min(at + w, kLanes)), row);
  if (at + w > kLanes) {
    const size_t in_lo = at < kLanes ? kLanes - at : 0;  // the row's floats already in lo
    p.hi = _mm512_mask_expandloadu_ps(p.hi, lanes_between(at + in_lo - kLanes, at + w - kLanes), row + in_lo);
  }
}

// Lane l of a vector of segments `width` tiles wide: segment l / width, tile l % width (kLaneTiles), as
// constants, so that a call's permutation indices take a few vector operations.
struct LaneTiles {
  alignas(64) int32_t segment[kNarrowTiles + 1][kLanes];
  alignas(64) int32_t tile[kNarrowTiles + 1][kLanes];
};

constexpr LaneTiles lane_tiles() {
  LaneTiles t{};
  for (size_t width = 1; width <= kNarrowTiles; ++width)
    for (size_t l = 0; l < kLanes; ++l) {
      t.segment[width][l] = int32_t(l / width);
      t.tile[width][l] = int32_t(l % width);
    }
  return t;
}

constexpr LaneTiles kLaneTiles = lane_tiles();

// Lane l as tile t of segment j: the index (into Stacked's 32 floats) of its row's column 2t + offset, and
// the lanes where that column lies in 0 .. w - 1 (lanes past the vector's last segment are never stored).
struct TileColumn {
  __m512i index;
  __mmask16 inside;
};

DPT_AVX512 inline TileColumn tile_column(const Segments &g, int offset, size_t w) {
  // (Additions and masked moves rather than VPSLLD and VPMAXSD: GCC 12 warns that their intrinsics' unused
  // pass-through operand is uninitialized.)
  const __m512i segment = _mm512_load_si512(kLaneTiles.segment[g.width]);
  const __m512i tile = _mm512_load_si512(kLaneTiles.tile[g.width]);
  const __m512i column = _mm512_add_epi32(_mm512_add_epi32(tile, tile), _mm512_set1_epi32(offset));
  const __mmask16 from_zero = _mm512_cmpge_epi32_mask(column, _mm512_setzero_si512());
  const __mmask16 inside = from_zero & _mm512_cmplt_epi32_mask(column, _mm512_set1_epi32(int(w)));
  const __m512i start = _mm512_mullo_epi32(segment, _mm512_set1_epi32(int(2 * g.width)));
  return TileColumn{_mm512_add_epi32(start, _mm512_maskz_mov_epi32(from_zero, column)), inside};
}

DPT_AVX512 inline __m512 columns_of(const Stacked &p, const TileColumn &c) {
  return _mm512_maskz_permutex2var_ps(c.inside, p.lo, c.index, p.hi);
}

// Columns 2t - 1 .. 2t + 2 of the tiles' patch rows (zeros outside the image), for input's segments.
struct InputColumns {
  TileColumn k[4];
};

DPT_AVX512 inline InputColumns input_columns(const Plane &s, const Segments &g) {
  return InputColumns{
      {tile_column(g, -1, s.w), tile_column(g, 0, s.w), tile_column(g, 1, s.w), tile_column(g, 2, s.w)}};
}

// The 16 points q of the segments from `first` (count of them).
DPT_AVX512 inline void narrow_input_points(const Plane &s, Planes planes, const float *x, const Segments &g,
                                           const InputColumns &cols, size_t first, size_t count,
                                           __m512 (&q)[kPoints]) {
  __m512 c[4][4];  // c[k][r]: column k of patch row r
  for (size_t r = 0; r < 4; ++r) {
    Stacked rows = no_rows();
    for (size_t j = 0; j < count; ++j) {
      const size_t padded = 2 * g.tile_row(first + j) + r;  // image row padded - 1
      if (padded == 0 || padded > s.h) continue;
      stack_row(rows, g, j, x + g.plane(first + j) * planes.apart + (padded - 1) * s.w, s.w);
    }
    for (size_t k = 0; k < 4; ++k) c[k][r] = columns_of(rows, cols.k[k]);
  }
  input_points_of(c[0], c[1], c[2], c[3], q);
}

}  // namespace

DPT_AVX512 void input_narrow(const Plane &s, Planes planes, const float *x, float *v, size_t stride) {
  const Segments g = segments_of(s, planes.count);
  const InputColumns cols = input_columns(s, g);
  for (size_t first = 0; first < g.count; first += g.per_vector) {
    const size_t count = std::min(g.per_vector, g.count - first);
    __m512 q[kPoints];
    narrow_input_points(s, planes, x, g, cols, first, count, q);
    for (size_t p = 0; p < kPoints; ++p)
      _mm512_mask_storeu_ps(v + p * stride + first * g.width, first_lanes(count * g.width), q[p]);
  }
}

// The loop again rather than a template over the stored type: the bfloat16 store needs the AVX512_BF16
// target, which a function compiled for DPT_AVX512 cannot inline (the same holds for the output gradient's).
DPT_AVX512_BF16 void input_bf16_narrow(const Plane &s, Planes planes, const float *x, uint16_t *v,
                                       size_t stride) {
  const Segments g = segments_of(s, planes.count);
  const InputColumns cols = input_columns(s, g);
  for (size_t first = 0; first < g.count; first += g.per_vector) {
    const size_t count = std::min(g.per_vector, g.count - first);
    __m512 q[kPoints];
    narrow_input_points(s, planes, x, g, cols, first, count, q);
    for (size_t p = 0; p < kPoints; ++p)
      store_bf16(v + p * stride + first * g.width, first_lanes(count * g.width), q[p]);
  }
}

namespace {

// The 16 points q of dM for the segments from `first`: each tile's output gradients at columns 2t, 2t + 1 of
// rows 2 ty, 2 ty + 1 (zeros past the plane's edge).
DPT_AVX512 inline void narrow_output_gradient_points(const Plane &s, Planes planes, const float *dy,
                                                     const Segments &g, const TileColumn &even,
                                                     const TileColumn &odd, size_t first, size_t count,
                                                     __m512 (&q)[kPoints]) {
  Stacked row0 = no_rows(), row1 = no_rows();
  for (size_t j = 0; j < count; ++j) {
    const float *plane = dy + g.plane(first + j) * planes.apart;
    const size_t ty = g.tile_row(first + j);
    stack_row(row0, g, j, plane + 2 * ty * s.w, s.w);
    if (2 * ty + 1 < s.h) stack_row(row1, g, j, plane + (2 * ty + 1) * s.w, s.w);
  }
  output_gradient_points_of(columns_of(row0, even), columns_of(row0, odd), columns_of(row1, even),
                            columns_of(row1, odd), q);
}

}  // namespace

DPT_AVX512 void output_gradient_narrow(const Plane &s, Planes planes, const float *dy, float *m,
                                       size_t stride) {
  const Segments g = segments_of(s, planes.count);
  const TileColumn even = tile_column(g, 0, s.w), odd = tile_column(g, 1, s.w);
  for (size_t first = 0; first < g.count; first += g.per_vector) {
    const size_t count = std::min(g.per_vector, g.count - first);
    __m512 q[kPoints];
    narrow_output_gradient_points(s, planes, dy, g, even, odd, first, count, q);
    for (size_t p = 0; p < kPoints; ++p)
      _mm512_mask_storeu_ps(m + p * stride + first * g.width, first_lanes(count * g.width), q[p]);
  }
}

DPT_AVX512_BF16 void output_gradient_bf16_narrow(const Plane &s, Planes planes, const float *dy, uint16_t *m,
                                                 size_t stride) {
  const Segments g = segments_of(s, planes.count);
  const TileColumn even = tile_column(g, 0, s.w), odd = tile_column(g, 1, s.w);
  for (size_t first = 0; first < g.count; first += g.per_vector) {
    const size_t count = std::min(g.per_vector, g.count - first);
    __m512 q[kPoints];
    narrow_output_gradient_points(s, planes, dy, g, even, odd, first, count, q);
    for (size_t p = 0; p < kPoints; ++p)
      store_bf16(m + p * stride + first * g.width, first_lanes(count * g.width), q[p]);
  }
}

namespace {

// Lane c of a row of segment j's tiles, from two vectors of tile values: tile c / 2 - shift of the segment,
// from the first vector for even c, the second for odd c (permutex2var's index; the lanes before the
// segment's first tile get an index of some other lane, for the caller's mask to drop).
DPT_AVX512 inline __m512i row_of_tiles(const Segments &g, size_t j, int shift) {
  const __m512i half = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  const __m512i second = _mm512_setr_epi32(0, 16, 0, 16, 0, 16, 0, 16, 0, 16, 0, 16, 0, 16, 0, 16);
  const __m512i tile = _mm512_add_epi32(half, _mm512_set1_epi32(int(j * g.width) - shift));
  return _mm512_or_si512(second, _mm512_and_si512(tile, _mm512_set1_epi32(15)));
}

}  // namespace

DPT_AVX512 void output_narrow(const Plane &s, Planes planes, const float *m, size_t stride, float bias,
                              float *y) {
  const Segments g = segments_of(s, planes.count);
  const __m512 b = _mm512_set1_ps(bias);
  for (size_t first = 0; first < g.count; first += g.per_vector) {
    const size_t count = std::min(g.per_vector, g.count - first);
    __m512 q[kPoints];
    load_points(m + first * g.width, stride, first_lanes(count * g.width), q);
    const OutputRows o = output_rows_of(q, b);
    for (size_t j = 0; j < count; ++j) {
      float *row = y + g.plane(first + j) * planes.apart + 2 * g.tile_row(first + j) * s.w;
      _mm512_mask_storeu_ps(row, first_lanes(s.w),
                            _mm512_permutex2var_ps(o.left0, row_of_tiles(g, j, 0), o.right0));
      if (2 * g.tile_row(first + j) + 1 < s.h)
        _mm512_mask_storeu_ps(row + s.w, first_lanes(s.w),
                              _mm512_permutex2var_ps(o.left1, row_of_tiles(g, j, 0), o.right1));
    }
  }
}

// The patches accumulate in each plane's zero-bordered copy (padded_h rows of padded_w <= 16 floats). A
// padded row takes its tiles' columns 2 and 3 (tile c / 2 - 1 at column c) before columns 0 and 1 (tile c /
// 2), and a vector's patch rows go from the last to the first: a pixel then takes its tiles in the portable
// loop's order (tile row ty - 1's patch row i + 2 before tile row ty's patch row i).
DPT_AVX512 void input_gradient_narrow(const Plane &s, Planes planes, const float *v, size_t stride, float *dx,
                                      float *pad) {
  const Segments g = segments_of(s, planes.count);
  const size_t pw = s.padded_w(), ph = s.padded_h();
  for (size_t i = 0; i < planes.count * ph * pw; i += kLanes)
    _mm512_mask_storeu_ps(pad + i, first_lanes(planes.count * ph * pw - i), _mm512_setzero_ps());
  const __mmask16 before = __mmask16(((1u << (2 * g.width)) - 1u) << 2);  // columns 2 .. 2 width + 1
  const __mmask16 own = first_lanes(2 * g.width);                         // columns 0 .. 2 width - 1
  for (size_t first = 0; first < g.count; first += g.per_vector) {
    const size_t count = std::min(g.per_vector, g.count - first);
    __m512 q[kPoints];
    load_points(v + first * g.width, stride, first_lanes(count * g.width), q);
    __m512 h[4][4];  // B dV
    input_gradient_rows_of(q, h);
    for (size_t i = 4; i-- > 0;) {
      // Columns 0 .. 3 of patch row i; the portable loop's `row[3] -= h3` as adding -h3 (the same bits).
      const __m512 p0 = h[i][0], p1 = add(sub(h[i][1], h[i][2]), h[i][3]);
      const __m512 p2 = sub(add(h[i][1], h[i][2]), h[i][0]), p3 = negate(h[i][3]);
      for (size_t j = 0; j < count; ++j) {
        float *row = pad + (g.plane(first + j) * ph + 2 * g.tile_row(first + j) + i) * pw;
        __m512 acc = _mm512_maskz_loadu_ps(first_lanes(pw), row);
        acc = _mm512_mask_add_ps(acc, before, acc, _mm512_permutex2var_ps(p2, row_of_tiles(g, j, 1), p3));
        acc = _mm512_mask_add_ps(acc, own, acc, _mm512_permutex2var_ps(p0, row_of_tiles(g, j, 0), p1));
        _mm512_mask_storeu_ps(row, first_lanes(pw), acc);
      }
    }
  }
  for (size_t i = 0; i < planes.count; ++i)
    for (size_t y = 0; y < s.h; ++y)
      _mm512_mask_storeu_ps(dx + i * planes.apart + y * s.w, first_lanes(s.w),
                            _mm512_maskz_loadu_ps(first_lanes(s.w), pad + (i * ph + y + 1) * pw + 1));
}

}  // namespace dpt::cpu::winograd::avx512
