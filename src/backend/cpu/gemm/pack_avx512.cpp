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

// (The maskz forms throughout: GCC 12 warns falsely about the _mm512_undefined_* of the unmasked ones,
// e.g. _mm512_cvtepi32_epi16 and _mm512_cvtepu16_epi32.)

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
// Up to 16 bfloat16 values of a row (w of them; the rest zero) in float32, exactly: a bfloat16 operand
// (Operand::bf16) goes through the float32 packers' rounding in registers.
DPT_AVX512 inline __m512 load(const uint16_t *row, size_t w) {
  const __m256i halves = _mm256_maskz_loadu_epi16(first(w), row);
  return _mm512_castsi512_ps(
      _mm512_maskz_slli_epi32(__mmask16(0xFFFF), _mm512_maskz_cvtepu16_epi32(__mmask16(0xFFFF), halves), 16));
}

// Transposes 16 x 16 32-bit words in place: r[i] lane j becomes r[j] lane i.
DPT_AVX512 inline void transpose16(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_maskz_unpacklo_epi32(__mmask16(0xFFFF), r[i], r[i + 1]);
    t[i + 1] = _mm512_maskz_unpackhi_epi32(__mmask16(0xFFFF), r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_maskz_unpacklo_epi64(__mmask8(0xFF), t[i], t[i + 2]);
    r[i + 1] = _mm512_maskz_unpackhi_epi64(__mmask8(0xFF), t[i], t[i + 2]);
    r[i + 2] = _mm512_maskz_unpacklo_epi64(__mmask8(0xFF), t[i + 1], t[i + 3]);
    r[i + 3] = _mm512_maskz_unpackhi_epi64(__mmask8(0xFF), t[i + 1], t[i + 3]);
  }
  for (int h = 0; h < 16; h += 8)
    for (int i = 0; i < 4; ++i) {
      t[h + i] = _mm512_maskz_shuffle_i32x4(__mmask16(0xFFFF), r[h + i], r[h + i + 4], 0x88);
      t[h + i + 4] = _mm512_maskz_shuffle_i32x4(__mmask16(0xFFFF), r[h + i], r[h + i + 4], 0xdd);
    }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_maskz_shuffle_i32x4(__mmask16(0xFFFF), t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_maskz_shuffle_i32x4(__mmask16(0xFFFF), t[i], t[i + 8], 0xdd);
  }
}

// even[i] and odd[i] rounded to bfloat16 as to_bf16 and paired in word i (even in the low half):
// VCVTNE2PS2BF16 gives the 16 even values, then the 16 odd ones, interleaved by one permutation.
DPT_AVX512_BF16 inline __m512i interleaved_pairs(__m512 even, __m512 odd) {
  alignas(64) static const uint16_t kInterleave[32] = {0,  16, 1,  17, 2,  18, 3,  19, 4,  20, 5,
                                                       21, 6,  22, 7,  23, 8,  24, 9,  25, 10, 26,
                                                       11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i halves = (__m512i)_mm512_cvtne2ps_pbh(odd, even);
  return _mm512_maskz_permutexvar_epi16(~__mmask32(0), _mm512_load_si512(kInterleave), halves);
}

// 32 consecutive floats of a row from src (w of them; the rest zero) rounded to bfloat16 as to_bf16: 16
// words, each a pair of k (the even one in the low half). VCVTNE2PS2BF16 rounds as VCVTNEPS2BF16.
template <typename T>
DPT_AVX512_BF16 inline __m512i pair_words(const T *src, size_t w) {
  const __m512 lo = load(src, w), hi = w > 16 ? load(src + 16, w - 16) : _mm512_setzero_ps();
  return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
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

namespace {

template <typename T>
DPT_AVX512_BF16 void pairs_b32_rows(const T *data, size_t ld, size_t p0, size_t kc, size_t j0, size_t cols,
                                    void *out, size_t k_unit) {
  uint32_t *o = static_cast<uint32_t *>(out);  // a pair (k even in the low half) per 32-bit word
  const size_t panels = (cols + kNR - 1) / kNR, kp = (kc + k_unit - 1) / k_unit * k_unit, pairs = kp / 2;
  for (size_t q = 0; q < pairs; ++q) {
    const size_t p = 2 * q;
    const T *even = data + (p0 + p) * ld + j0, *odd = even + ld;
    for (size_t j = 0; j < panels; ++j) {
      const size_t w = cols - j * kNR < kNR ? cols - j * kNR : kNR;
      uint32_t *dst = o + (j * pairs + q) * kNR;
      for (size_t h = 0; h < kNR; h += 16) {
        const size_t wh = w > h ? w - h : 0;
        const __m512 e = p < kc && wh > 0 ? load(even + j * kNR + h, wh) : _mm512_setzero_ps();
        const __m512 d = p + 1 < kc && wh > 0 ? load(odd + j * kNR + h, wh) : _mm512_setzero_ps();
        _mm512_storeu_si512(dst + h, interleaved_pairs(e, d));
      }
    }
  }
}

// Column j of op(B) (stored as row j) holds its k contiguously: 16 columns' 32 k at a time rounded to
// their 16 pair words each, transposed in registers, and stored 16 columns to a pair.
template <typename T>
DPT_AVX512_BF16 void pairs_b32_cols(const T *data, size_t ld, size_t p0, size_t kc, size_t j0, size_t cols,
                                    void *out, size_t k_unit) {
  uint32_t *o = static_cast<uint32_t *>(out);
  const size_t panels = (cols + kNR - 1) / kNR, kp = (kc + k_unit - 1) / k_unit * k_unit, pairs = kp / 2;
  for (size_t j = 0; j < panels; ++j) {
    uint32_t *panel = o + j * pairs * kNR;
    for (size_t c = 0; c < kNR; c += 16) {
      const size_t first_col = j * kNR + c;
      const size_t w = cols > first_col ? (cols - first_col < 16 ? cols - first_col : 16) : 0;
      const T *base = data + (j0 + first_col) * ld + p0;
      for (size_t q = 0; q < pairs; q += 16) {
        const size_t left = kc > 2 * q ? kc - 2 * q : 0;  // values of each column from pair q on
        __m512i words[16];
        for (size_t r = 0; r < 16; ++r)
          words[r] = r < w && left > 0 ? pair_words(base + r * ld + 2 * q, left) : _mm512_setzero_si512();
        transpose16(words);
        const size_t n = pairs - q < 16 ? pairs - q : 16;
        for (size_t t = 0; t < n; ++t) _mm512_storeu_si512(panel + (q + t) * kNR + c, words[t]);
      }
    }
  }
}

constexpr size_t kPairsMR = 12;

// A row's k are contiguous: 32 k (16 pairs) of each of a panel's 12 rows rounded to pair words at once,
// the 12 x 16 words transposed in registers (with four zero rows) and stored 12 to a pair.
template <typename T>
DPT_AVX512_BF16 void pairs_a12_rows(const T *data, size_t ld, size_t i0, size_t rows, size_t p0, size_t kc,
                                    void *out) {
  uint32_t *o = static_cast<uint32_t *>(out);
  const size_t pairs = (kc + 1) / 2;
  for (size_t i = 0; i < rows; i += kPairsMR, o += pairs * kPairsMR)
    for (size_t q = 0; q < pairs; q += 16) {
      __m512i words[16];
      for (size_t r = 0; r < 16; ++r)  // rows past the last are zeros
        words[r] = r < kPairsMR && i + r < rows
                       ? pair_words(data + (i0 + i + r) * ld + p0 + 2 * q, kc - 2 * q)
                       : _mm512_setzero_si512();
      transpose16(words);
      const size_t n = pairs - q < 16 ? pairs - q : 16;
      for (size_t t = 0; t < n; ++t)
        _mm512_mask_storeu_epi32(o + (q + t) * kPairsMR, __mmask16(0x0FFF), words[t]);
    }
}

// op(A) transposed: element (r, p) is at data[p * ld + r], so the 12 rows of a pair's k are contiguous.
template <typename T>
DPT_AVX512_BF16 void pairs_a12_cols(const T *data, size_t ld, size_t i0, size_t rows, size_t p0, size_t kc,
                                    void *out) {
  uint32_t *o = static_cast<uint32_t *>(out);
  const size_t pairs = (kc + 1) / 2;
  for (size_t i = 0; i < rows; i += kPairsMR) {
    const size_t live = rows - i < kPairsMR ? rows - i : kPairsMR;
    const T *base = data + p0 * ld + i0 + i;
    for (size_t q = 0; q < pairs; ++q, o += kPairsMR) {
      const size_t p = 2 * q;
      const __m512 e = load(base + p * ld, live);
      const __m512 d = p + 1 < kc ? load(base + (p + 1) * ld, live) : _mm512_setzero_ps();
      _mm512_mask_storeu_epi32(o, first(kPairsMR), interleaved_pairs(e, d));
    }
  }
}

}  // namespace

// The bfloat16 packers: float32 operands, or bfloat16 ones (Operand::bf16) read as their float32 values.
void pack_pairs_b32_rows(const Operand &b, size_t p0, size_t kc, size_t j0, size_t cols, void *out,
                         size_t k_unit) {
  if (b.bf16 != nullptr)
    pairs_b32_rows(b.bf16, b.ld, p0, kc, j0, cols, out, k_unit);
  else
    pairs_b32_rows(b.data, b.ld, p0, kc, j0, cols, out, k_unit);
}

void pack_pairs_b32_cols(const Operand &b, size_t p0, size_t kc, size_t j0, size_t cols, void *out,
                         size_t k_unit) {
  if (b.bf16 != nullptr)
    pairs_b32_cols(b.bf16, b.ld, p0, kc, j0, cols, out, k_unit);
  else
    pairs_b32_cols(b.data, b.ld, p0, kc, j0, cols, out, k_unit);
}

void pack_pairs_a12_rows(const Operand &a, size_t i0, size_t rows, size_t p0, size_t kc, void *out) {
  if (a.bf16 != nullptr)
    pairs_a12_rows(a.bf16, a.ld, i0, rows, p0, kc, out);
  else
    pairs_a12_rows(a.data, a.ld, i0, rows, p0, kc, out);
}

void pack_pairs_a12_cols(const Operand &a, size_t i0, size_t rows, size_t p0, size_t kc, void *out) {
  if (a.bf16 != nullptr)
    pairs_a12_cols(a.bf16, a.ld, i0, rows, p0, kc, out);
  else
    pairs_a12_cols(a.data, a.ld, i0, rows, p0, kc, out);
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
