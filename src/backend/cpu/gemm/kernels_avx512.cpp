// AVX-512 kernels: float32 with vfmadd231ps, bfloat16 with VDPBF16PS (AVX512_BF16) or, without it, with
// vfmadd231ps in VDPBF16PS's order, float16 widened by VCVTPH2PS then vfmadd231ps, each over a 12 x 32
// tile of C in 24 zmm accumulators. Compiled for these instruction sets function by function (the rest
// of the library runs on any x86-64); gemm.cpp calls them only where cpu_features() says they run. Their
// bits are the portable kernels' (kernels_portable.cpp): the same operations per element in the same order.
#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/gemm/avx512_store.hpp"
#include "backend/cpu/gemm/flush_subnormals.hpp"
#include "backend/cpu/gemm/pack.hpp"
#include "backend/cpu/gemm/pack_avx512.hpp"

#define DPT_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma,avx512bf16")))

namespace dpt::gemm {

namespace {

constexpr size_t kMR = 12, kNR = 32;

DPT_AVX512 void tile_f32(size_t kc, const void *ap, const void *bp, float *c, size_t ldc, float alpha,
                         float beta) {
  const float *a = static_cast<const float *>(ap), *b = static_cast<const float *>(bp);
  __m512 acc[kMR][2];
#pragma GCC unroll 12
  for (size_t i = 0; i < kMR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (size_t p = 0; p < kc; ++p, a += kMR, b += kNR) {
    const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 12
    for (size_t i = 0; i < kMR; ++i) {
      const __m512 x = _mm512_set1_ps(a[i]);
      acc[i][0] = _mm512_fmadd_ps(x, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(x, b1, acc[i][1]);
    }
  }
#pragma GCC unroll 12
  for (size_t i = 0; i < kMR; ++i) store_row(acc[i][0], acc[i][1], c + i * ldc, alpha, beta);
}

// VDPBF16PS acc, b, a: per lane j, acc += b[2j+1] a[1], then += b[2j] a[0] (the pair of k), rounded
// each time (measured against the portable kernel's two std::fma, bit for bit).
DPT_AVX512_BF16 void tile_bf16(size_t kc, const void *ap, const void *bp, float *c, size_t ldc, float alpha,
                               float beta) {
  const uint32_t *a = static_cast<const uint32_t *>(ap);
  const uint16_t *b = static_cast<const uint16_t *>(bp);
  __m512 acc[kMR][2];
#pragma GCC unroll 12
  for (size_t i = 0; i < kMR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (size_t q = 0; q < kc / 2; ++q, a += kMR, b += 2 * kNR) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b), b1 = (__m512bh)_mm512_loadu_si512(b + kNR);
#pragma GCC unroll 12
    for (size_t i = 0; i < kMR; ++i) {
      const __m512bh x = (__m512bh)_mm512_set1_epi32(int(a[i]));
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], b0, x);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], b1, x);
    }
  }
#pragma GCC unroll 12
  for (size_t i = 0; i < kMR; ++i) store_row(acc[i][0], acc[i][1], c + i * ldc, alpha, beta);
}

// VDPBF16PS's bits on AVX-512 CPUs without AVX512_BF16 (Skylake-SP to Ice Lake): A's values held as the
// float32 of their bfloat16 (pack_bf16_a_wide), each 32-bit word of the B panel split into its pair's two
// float32 (a bfloat16 is the high half of its float32), and per pair of k the instruction's two roundings,
// acc = fma(a[2q+1], b[2q+1], acc) then fma(a[2q], b[2q], acc), subnormals flushed as it flushes them
// (MXCSR's FTZ and DAZ around the products, not the epilogue): the portable kernel's operations, at the
// float32 kernel's rate of fused multiply-adds.
DPT_AVX512 void tile_bf16_fma(size_t kc, const void *ap, const void *bp, float *c, size_t ldc, float alpha,
                              float beta) {
  const float *a = static_cast<const float *>(ap);
  const uint16_t *b = static_cast<const uint16_t *>(bp);
  const __m512i high = _mm512_set1_epi32(int(0xFFFF0000u));
  __m512 acc[kMR][2];
#pragma GCC unroll 12
  for (size_t i = 0; i < kMR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  {
    const FlushSubnormals flush;
    for (size_t q = 0; q < kc / 2; ++q, a += 2 * kMR, b += 2 * kNR) {
      const __m512i w0 = _mm512_loadu_si512(b), w1 = _mm512_loadu_si512(b + kNR);
      // (The zero-masked shift: GCC 12's unmasked one reads an "undefined" register that -O1 warns about.)
      const __m512 even0 = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(__mmask16(0xFFFF), w0, 16));
      const __m512 even1 = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(__mmask16(0xFFFF), w1, 16));
      const __m512 odd0 = _mm512_castsi512_ps(_mm512_and_si512(w0, high));
      const __m512 odd1 = _mm512_castsi512_ps(_mm512_and_si512(w1, high));
#pragma GCC unroll 12
      for (size_t i = 0; i < kMR; ++i) {
        const __m512 x0 = _mm512_set1_ps(a[i]), x1 = _mm512_set1_ps(a[kMR + i]);
        acc[i][0] = _mm512_fmadd_ps(x0, even0, _mm512_fmadd_ps(x1, odd0, acc[i][0]));
        acc[i][1] = _mm512_fmadd_ps(x0, even1, _mm512_fmadd_ps(x1, odd1, acc[i][1]));
      }
    }
  }
#pragma GCC unroll 12
  for (size_t i = 0; i < kMR; ++i) store_row(acc[i][0], acc[i][1], c + i * ldc, alpha, beta);
}

// B's float16 widened to float32 as it is loaded (exact), A's float16 values held as float32 by the packer.
DPT_AVX512 void tile_f16(size_t kc, const void *ap, const void *bp, float *c, size_t ldc, float alpha,
                         float beta) {
  const float *a = static_cast<const float *>(ap);
  const uint16_t *b = static_cast<const uint16_t *>(bp);
  __m512 acc[kMR][2];
#pragma GCC unroll 12
  for (size_t i = 0; i < kMR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (size_t p = 0; p < kc; ++p, a += kMR, b += kNR) {
    const __m512 b0 =
        _mm512_maskz_cvtph_ps(__mmask16(0xFFFF), _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b)));
    const __m512 b1 = _mm512_maskz_cvtph_ps(__mmask16(0xFFFF),
                                            _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b + 16)));
#pragma GCC unroll 12
    for (size_t i = 0; i < kMR; ++i) {
      const __m512 x = _mm512_set1_ps(a[i]);
      acc[i][0] = _mm512_fmadd_ps(x, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(x, b1, acc[i][1]);
    }
  }
#pragma GCC unroll 12
  for (size_t i = 0; i < kMR; ++i) store_row(acc[i][0], acc[i][1], c + i * ldc, alpha, beta);
}

// The AVX-512 packers (pack_avx512.hpp), but for a transposed float32 B (pack.hpp's).
void pack_f32_b_nr(const Operand &b, size_t p0, size_t kc, size_t j0, size_t cols, void *out) {
  if (b.trans)
    pack_f32_b<kNR>(b, p0, kc, j0, cols, out);
  else
    pack_f32_b32_rows(b, p0, kc, j0, cols, out);
}

void pack_pairs_b_nr(const Operand &b, size_t p0, size_t kc, size_t j0, size_t cols, void *out) {
  if (b.trans)
    pack_pairs_b32_cols(b, p0, kc, j0, cols, out, 2);
  else
    pack_pairs_b32_rows(b, p0, kc, j0, cols, out, 2);
}

void pack_pairs_a_mr(const Operand &a, size_t i0, size_t rows, size_t p0, size_t kc, void *out) {
  if (a.trans)
    pack_pairs_a12_cols(a, i0, rows, p0, kc, out);
  else
    pack_pairs_a12_rows(a, i0, rows, p0, kc, out);
}

// The AVX-512F bf16 kernel's packers: pack.hpp's loops, flattened into functions compiled for AVX-512 so
// that they vectorize at its width (pack_avx512's bfloat16 packers round with AVX512_BF16's VCVTNEPS2BF16).
DPT_AVX512 __attribute__((flatten)) void pack_pairs_b_fma(const Operand &b, size_t p0, size_t kc, size_t j0,
                                                          size_t cols, void *out) {
  pack_pairs_b<kNR>(b, p0, kc, j0, cols, out, 2);
}

DPT_AVX512 __attribute__((flatten)) void pack_bf16_a_fma(const Operand &a, size_t i0, size_t rows, size_t p0,
                                                         size_t kc, void *out) {
  pack_bf16_a_wide<kMR>(a, i0, rows, p0, kc, out);
}

void pack_f16_a_mr(const Operand &a, size_t i0, size_t rows, size_t p0, size_t kc, void *out) {
  pack_f32_a<kMR>(a, i0, rows, p0, kc, out);
  round_f16_in_place(static_cast<float *>(out), (rows + kMR - 1) / kMR * kMR * kc);
}

void pack_f16_b_nr(const Operand &b, size_t p0, size_t kc, size_t j0, size_t cols, void *out) {
  if (b.trans)
    pack_f16_b32_cols(b, p0, kc, j0, cols, out);
  else
    pack_f16_b32_rows(b, p0, kc, j0, cols, out);
}

}  // namespace

const KernelDef kF32Avx512{kMR,           kNR,      1,       256,    4, 4, pack_f32_a<kMR>,
                           pack_f32_b_nr, tile_f32, nullptr, nullptr};
const KernelDef kBF16Avx512{kMR,       kNR,     2,       512, 2, 2, pack_pairs_a_mr, pack_pairs_b_nr,
                            tile_bf16, nullptr, nullptr, true};
// kc 512 as the other bfloat16 kernels: the k blocks are part of the bits (each block's sum is scaled and
// added into C on its own).
const KernelDef kBF16Avx512F{kMR,           kNR,     2,      512, 4, 2, pack_bf16_a_fma, pack_pairs_b_fma,
                             tile_bf16_fma, nullptr, nullptr};
const KernelDef kF16Avx512{kMR, kNR, 1, 256, 4, 2, pack_f16_a_mr, pack_f16_b_nr, tile_f16, nullptr, nullptr};

}  // namespace dpt::gemm
