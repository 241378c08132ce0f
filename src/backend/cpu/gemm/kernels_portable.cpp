// The portable kernels: plain C++ over the same panels as the AVX-512 kernels, in the same order of
// operations, so that both give the same bits. Built with -ffp-contract=off: every fused multiply-add is
// an explicit std::fma, every other operation rounds on its own.
#include <cmath>
#include <cstdint>

#include "backend/cpu/gemm/flush_subnormals.hpp"
#include "backend/cpu/gemm/pack.hpp"

// DPT_CLONES (core/target_clones.hpp): where the CPU has FMA the loops vectorize and std::fma is one
// instruction: the same values, at the speed of plain vector code.
#include "core/target_clones.hpp"

namespace dpt::gemm {

namespace {

constexpr size_t kMR = 12, kNR = 32;

void store(const float (&acc)[kMR][kNR], float *c, size_t ldc, float alpha, float beta) {
  for (size_t i = 0; i < kMR; ++i)
    for (size_t j = 0; j < kNR; ++j) c[i * ldc + j] = combine(acc[i][j], alpha, beta, c[i * ldc + j]);
}

// acc[i][j] = sum over p of a[p][i] * b[p][j], one fused multiply-add per p in order (what AVX-512's
// vfmadd231ps does per lane).
DPT_CLONES void tile_f32(size_t kc, const void *ap, const void *bp, float *c, size_t ldc, float alpha,
                         float beta) {
  const float *a = static_cast<const float *>(ap), *b = static_cast<const float *>(bp);
  float acc[kMR][kNR] = {};
  for (size_t p = 0; p < kc; ++p, a += kMR, b += kNR)
    for (size_t i = 0; i < kMR; ++i)
      for (size_t j = 0; j < kNR; ++j) acc[i][j] = std::fma(a[i], b[j], acc[i][j]);
  store(acc, c, ldc, alpha, beta);
}

// VDPBF16PS per lane and pair q: acc = fma(a[2q+1], b[2q+1], acc), then fma(a[2q], b[2q], acc), each
// rounded to nearest even with subnormals flushed. The products of two bfloat16 values are exact in
// float32, so these are the instruction's two roundings.
DPT_CLONES void tile_bf16(size_t kc, const void *ap, const void *bp, float *c, size_t ldc, float alpha,
                          float beta) {
  const uint16_t *a = static_cast<const uint16_t *>(ap), *b = static_cast<const uint16_t *>(bp);
  float acc[kMR][kNR] = {};
  {
    const FlushSubnormals flush;
    for (size_t q = 0; q < kc / 2; ++q, a += 2 * kMR, b += 2 * kNR)
      for (size_t i = 0; i < kMR; ++i) {
        const float a0 = from_bf16(a[2 * i]), a1 = from_bf16(a[2 * i + 1]);
        for (size_t j = 0; j < kNR; ++j) {
          const float odd = std::fma(a1, from_bf16(b[2 * j + 1]), acc[i][j]);
          acc[i][j] = std::fma(a0, from_bf16(b[2 * j]), odd);
        }
      }
  }
  store(acc, c, ldc, alpha, beta);
}

// float16's reference: both panels as the float32 of float16 values (pack.hpp's pack_f16_*_wide), then
// the float32 tile: one fused multiply-add per k in order, what the AVX-512 kernel does after widening
// its float16 B panel (each product of two float16 values is exact in float32, so only the sums round).
void pack_pairs_b_nr(const Operand &b, size_t p0, size_t kc, size_t j0, size_t cols, void *out) {
  pack_pairs_b<kNR>(b, p0, kc, j0, cols, out, 2);
}

}  // namespace

size_t padded(const KernelDef &d, size_t kc) {
  return (kc + d.k_unit - 1) / d.k_unit * d.k_unit;
}

const KernelDef kF32Portable{kMR,      kNR,     1,      256, 4, 4, pack_f32_a<kMR>, pack_f32_b<kNR>,
                             tile_f32, nullptr, nullptr};
const KernelDef kBF16Portable{kMR,       kNR,     2,      512, 2, 2, pack_pairs_a<kMR>, pack_pairs_b_nr,
                              tile_bf16, nullptr, nullptr};
const KernelDef kF16Portable{kMR,      kNR,     1,      256, 4, 4, pack_f16_a<kMR>, pack_f16_b_wide<kNR>,
                             tile_f32, nullptr, nullptr};

}  // namespace dpt::gemm
