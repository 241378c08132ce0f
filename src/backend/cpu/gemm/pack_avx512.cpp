#include "backend/cpu/gemm/pack_avx512.hpp"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "core/float16.hpp"

#define DPT_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma")))
// The bfloat16 packers: only the bf16 kernels (AVX512_BF16, AMX) call them.
#define DPT_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma,avx512bf16")))

namespace dpt::gemm {

namespace {

constexpr size_t kNR = 32;

// Lanes of w (< 16) set.
DPT_AVX512 inline __mmask16 first(size_t w) {
  return w >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << w) - 1u);
}

// A shift of every lane. (The maskz forms throughout: GCC 12 warns falsely about the _mm512_undefined_* of
// the unmasked ones, _mm512_slli_epi32, _mm512_cvtepi32_epi16 and _mm512_cvtepu16_epi32.)
DPT_AVX512 inline __m512i shift_left(__m512i x, unsigned n) {
  return _mm512_maskz_slli_epi32(__mmask16(0xFFFF), x, n);
}

// core/float16.hpp's to_bf16 on 16 lanes, the result in the low 16 bits of each 32-bit lane: VCVTNEPS2BF16
// (nearest even, subnormal inputs to a signed zero, NaN quietened keeping its sign and high payload), which
// is to_bf16 as the Intel SDM defines both; test_gemm holds every packer to to_bf16 on the rounding cases.
DPT_AVX512_BF16 inline __m512i to_bf16_lanes(__m512 x) {
  return _mm512_maskz_cvtepu16_epi32(__mmask16(0xFFFF), (__m256i)_mm512_cvtneps_pbh(x));
}

// Up to 16 floats of a row (w of them; the rest zero).
DPT_AVX512 inline __m512 load(const float *row, size_t w) {
  return w >= 16 ? _mm512_loadu_ps(row) : _mm512_maskz_loadu_ps(first(w), row);
}

}  // namespace

DPT_AVX512 void pack_f32_b32_rows(const Operand &b, size_t p0, size_t kc, size_t j0, size_t cols, void *out) {
  float *o = static_cast<float *>(out);
  const size_t panels = (cols + kNR - 1) / kNR;
  for (size_t p = 0; p < kc; ++p) {
    const float *row = b.data + (p0 + p) * b.ld + j0;
    for (size_t j = 0; j < panels; ++j) {
      const size_t w = cols - j * kNR < kNR ? cols - j * kNR : kNR;
      float *dst = o + (j * kc + p) * kNR;
      _mm512_storeu_ps(dst, load(row + j * kNR, w));
      _mm512_storeu_ps(dst + 16, w > 16 ? load(row + j * kNR + 16, w - 16) : _mm512_setzero_ps());
    }
  }
}

// VCVTPS2PH rounds to nearest even as to_f16 does, whatever MXCSR says (the immediate names the mode;
// binary16 subnormals are produced, not flushed).
// (The maskz forms: GCC 12 warns falsely about the unmasked ones' _mm256_undefined_si256.)
DPT_AVX512 inline __m256i to_f16_lanes(__m512 x) {
  return _mm512_maskz_cvtps_ph(__mmask16(0xFFFF), x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

DPT_AVX512 void pack_f16_b32_rows(const Operand &b, size_t p0, size_t kc, size_t j0, size_t cols, void *out) {
  uint16_t *o = static_cast<uint16_t *>(out);
  const size_t panels = (cols + kNR - 1) / kNR;
  for (size_t p = 0; p < kc; ++p) {
    const float *row = b.data + (p0 + p) * b.ld + j0;
    for (size_t j = 0; j < panels; ++j) {
      const size_t w = cols - j * kNR < kNR ? cols - j * kNR : kNR;
      __m256i *dst = reinterpret_cast<__m256i *>(o + (j * kc + p) * kNR);
      _mm256_storeu_si256(dst, to_f16_lanes(load(row + j * kNR, w)));
      const __m512 high = w > 16 ? load(row + j * kNR + 16, w - 16) : _mm512_setzero_ps();
      _mm256_storeu_si256(dst + 1, to_f16_lanes(high));
    }
  }
}

// Column j of op(B) (stored as row j) holds its k contiguously: 16 columns' element p are one gather.
DPT_AVX512 void pack_f16_b32_cols(const Operand &b, size_t p0, size_t kc, size_t j0, size_t cols, void *out) {
  uint16_t *o = static_cast<uint16_t *>(out);
  const size_t panels = (cols + kNR - 1) / kNR;
  const __m512i steps =
      _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                         _mm512_set1_epi32(int32_t(b.ld)));
  for (size_t j = 0; j < panels; ++j)
    for (size_t h = 0; h < kNR; h += 16) {
      const size_t first_col = j * kNR + h;
      const size_t w = cols > first_col ? (cols - first_col < 16 ? cols - first_col : 16) : 0;
      const float *base = b.data + (j0 + first_col) * b.ld + p0;
      for (size_t p = 0; p < kc; ++p) {
        const __m512 v = w > 0 ? _mm512_mask_i32gather_ps(_mm512_setzero_ps(), first(w), steps, base + p, 4)
                               : _mm512_setzero_ps();
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(o + (j * kc + p) * kNR + h), to_f16_lanes(v));
      }
    }
}

DPT_AVX512 void round_f16_in_place(float *x, size_t count) {
  size_t i = 0;
  for (; i + 16 <= count; i += 16)
    _mm512_storeu_ps(x + i, _mm512_maskz_cvtph_ps(__mmask16(0xFFFF), to_f16_lanes(_mm512_loadu_ps(x + i))));
  for (; i < count; ++i) x[i] = from_f16(to_f16(x[i]));
}

DPT_AVX512_BF16 void pack_pairs_b32_rows(const Operand &b, size_t p0, size_t kc, size_t j0, size_t cols,
                                         void *out, size_t k_unit) {
  uint32_t *o = static_cast<uint32_t *>(out);  // a pair (k even in the low half) per 32-bit word
  const size_t panels = (cols + kNR - 1) / kNR, kp = (kc + k_unit - 1) / k_unit * k_unit, pairs = kp / 2;
  for (size_t q = 0; q < pairs; ++q) {
    const size_t p = 2 * q;
    const float *even = b.data + (p0 + p) * b.ld + j0, *odd = even + b.ld;
    for (size_t j = 0; j < panels; ++j) {
      const size_t w = cols - j * kNR < kNR ? cols - j * kNR : kNR;
      uint32_t *dst = o + (j * pairs + q) * kNR;
      for (size_t h = 0; h < kNR; h += 16) {
        const size_t wh = w > h ? w - h : 0;
        const __m512 e = p < kc && wh > 0 ? load(even + j * kNR + h, wh) : _mm512_setzero_ps();
        const __m512 d = p + 1 < kc && wh > 0 ? load(odd + j * kNR + h, wh) : _mm512_setzero_ps();
        const __m512i pair = _mm512_or_si512(to_bf16_lanes(e), shift_left(to_bf16_lanes(d), 16));
        _mm512_storeu_si512(dst + h, pair);
      }
    }
  }
}

// Column j of op(B) (stored as row j) holds its k contiguously: pair q of columns [c, c + 8) is one 64-bit
// gather; an odd last k, and columns past the width, are read one float at a time or not at all.
DPT_AVX512_BF16 void pack_pairs_b32_cols(const Operand &b, size_t p0, size_t kc, size_t j0, size_t cols,
                                         void *out, size_t k_unit) {
  uint32_t *o = static_cast<uint32_t *>(out);
  const size_t panels = (cols + kNR - 1) / kNR, kp = (kc + k_unit - 1) / k_unit * k_unit, pairs = kp / 2;
  const __m512i rows8 =
      _mm512_mullo_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi64(int64_t(b.ld)));
  for (size_t j = 0; j < panels; ++j) {
    uint32_t *panel = o + j * pairs * kNR;
    for (size_t c = 0; c < kNR; c += 8) {
      const size_t first_col = j * kNR + c;
      const size_t w = cols > first_col ? (cols - first_col < 8 ? cols - first_col : 8) : 0;
      const __mmask8 live = __mmask8((1u << w) - 1u);
      const float *base = b.data + (j0 + first_col) * b.ld + p0;
      for (size_t q = 0; q < pairs; ++q) {
        const size_t p = 2 * q;
        __m512i pair = _mm512_setzero_si512();
        if (p + 1 < kc && w > 0) {
          const __m512i both = _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), live, rows8, base + p, 4);
          pair = to_bf16_lanes(_mm512_castsi512_ps(both));  // lanes: even, odd of column c, c + 1, ...
        } else if (p < kc && w > 0) {
          alignas(64) float even[16] = {};
          for (size_t i = 0; i < w; ++i) even[2 * i] = base[i * b.ld + p];
          pair = to_bf16_lanes(_mm512_load_ps(even));
        }
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(panel + q * kNR + c),
                            _mm512_maskz_cvtepi32_epi16(__mmask16(0xFFFF), pair));
      }
    }
  }
}

// A row's k are contiguous: 32 k (16 pairs) of it rounded at a time, their pairs scattered to the row's
// place in the panel (pair q of row r at word q * 12 + r).
DPT_AVX512_BF16 void pack_pairs_a12_rows(const Operand &a, size_t i0, size_t rows, size_t p0, size_t kc,
                                         void *out) {
  constexpr size_t kMR = 12;
  uint32_t *o = static_cast<uint32_t *>(out);
  const size_t pairs = (kc + 1) / 2;
  alignas(64) static const uint16_t kLowHalves[32] = {0,  2,  4,  6,  8,  10, 12, 14, 16, 18, 20,
                                                      22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42,
                                                      44, 46, 48, 50, 52, 54, 56, 58, 60, 62};
  const __m512i low_halves = _mm512_load_si512(kLowHalves);
  const __m512i places =
      _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                         _mm512_set1_epi32(int32_t(kMR)));
  for (size_t i = 0; i < rows; i += kMR, o += pairs * kMR)
    for (size_t r = 0; r < kMR; ++r) {
      const bool live = i + r < rows;  // rows past the last are zeros
      const float *src = live ? a.data + (i0 + i + r) * a.ld + p0 : nullptr;
      for (size_t q = 0; q < pairs; q += 16) {
        const size_t w = live ? kc - 2 * q : 0;  // floats left in the row
        const __m512 lo = w > 0 ? load(src + 2 * q, w) : _mm512_setzero_ps();
        const __m512 hi = w > 16 ? load(src + 2 * q + 16, w - 16) : _mm512_setzero_ps();
        // The 32 rounded values' low halves in k order: 16 words, k even in the low half of each.
        const __m512i words = _mm512_permutex2var_epi16(to_bf16_lanes(lo), low_halves, to_bf16_lanes(hi));
        _mm512_mask_i32scatter_epi32(o + q * kMR + r, first(pairs - q), places, words, 4);
      }
    }
}

// op(A) transposed: element (r, p) is at data[p * ld + r], so the 12 rows of a pair's k are contiguous.
DPT_AVX512_BF16 void pack_pairs_a12_cols(const Operand &a, size_t i0, size_t rows, size_t p0, size_t kc,
                                         void *out) {
  constexpr size_t kMR = 12;
  uint32_t *o = static_cast<uint32_t *>(out);
  const size_t pairs = (kc + 1) / 2;
  for (size_t i = 0; i < rows; i += kMR) {
    const __mmask16 live = first(rows - i < kMR ? rows - i : kMR);
    const float *base = a.data + p0 * a.ld + i0 + i;
    for (size_t q = 0; q < pairs; ++q, o += kMR) {
      const size_t p = 2 * q;
      const __m512 e = _mm512_maskz_loadu_ps(live, base + p * a.ld);
      const __m512 d = p + 1 < kc ? _mm512_maskz_loadu_ps(live, base + (p + 1) * a.ld) : _mm512_setzero_ps();
      const __m512i pair = _mm512_or_si512(to_bf16_lanes(e), shift_left(to_bf16_lanes(d), 16));
      _mm512_mask_storeu_epi32(o, first(kMR), pair);
    }
  }
}

// AMX's A panels, rows [i0, i0 + rows) of 32 k blocks: load16(row, k, w) gives 16 floats of op(A)'s row
// from k on (w of them, the rest zero); rows past the end are zero.
template <typename Load16>
DPT_AVX512_BF16 void pack_amx_a(size_t rows, size_t kc, void *out, Load16 load16) {
  constexpr size_t kMR = 32, kK = 32;
  uint16_t *o = static_cast<uint16_t *>(out);
  const size_t kp = (kc + kK - 1) / kK * kK;
  for (size_t i = 0; i < rows; i += kMR)
    for (size_t kb = 0; kb < kp; kb += kK)
      for (size_t r = 0; r < kMR; ++r, o += kK) {
        if (i + r >= rows) {
          std::memset(o, 0, kK * sizeof(uint16_t));
          continue;
        }
        const size_t w = kc > kb ? kc - kb : 0;
        for (size_t h = 0; h < kK; h += 16) {
          const size_t wh = w > h ? w - h : 0;
          const __m512 v = wh > 0 ? load16(i + r, kb + h, wh) : _mm512_setzero_ps();
          _mm256_storeu_si256(reinterpret_cast<__m256i *>(o + h),
                              _mm512_maskz_cvtepi32_epi16(__mmask16(0xFFFF), to_bf16_lanes(v)));
        }
      }
}

DPT_AVX512_BF16 void pack_amx_a_rows(const Operand &a, size_t i0, size_t rows, size_t p0, size_t kc,
                                     void *out) {
  pack_amx_a(rows, kc, out, [&](size_t r, size_t k, size_t w) DPT_AVX512 {
    return load(a.data + (i0 + r) * a.ld + p0 + k, w);
  });
}

// op(A) transposed: a row's k are a column of the storage, gathered 16 at a time.
DPT_AVX512_BF16 void pack_amx_a_cols(const Operand &a, size_t i0, size_t rows, size_t p0, size_t kc,
                                     void *out) {
  const __m512i steps =
      _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                         _mm512_set1_epi32(int32_t(a.ld)));
  pack_amx_a(rows, kc, out, [&](size_t r, size_t k, size_t w) DPT_AVX512 {
    return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), first(w), steps, a.data + (p0 + k) * a.ld + i0 + r,
                                    4);
  });
}

}  // namespace dpt::gemm
