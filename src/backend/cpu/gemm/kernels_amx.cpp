// The AMX bfloat16 kernel: a 32 x 32 tile of C in four 16 x 16 float32 tiles, k in blocks of 32 (one
// TDPBF16PS per pair of A and B tiles). B's panels are the VDPBF16PS kernel's pairs (a tile row holds 16
// columns' pairs); A's hold 32 consecutive k per row (one 64-byte tile row). The tile unit sums the 32
// products of an instruction in an order of its own, so its bits differ from the portable kernel's
// (measured: most elements by an ulp or so of float32), but not from run to run or from how many columns a
// call has.
#include "backend/cpu/gemm/kernels.hpp"

#if defined(_WIN32)

namespace dpt::gemm {
// GCC 12's tile load and store intrinsics pass the stride as a long, 32 bits on Windows, which the
// assembler refuses as an index register. Windows builds never run AMX (cpu_features reports it on Linux
// only, where the kernel grants the tile state), so the entry only has to exist.
const KernelDef kBF16Amx = kBF16Portable;
}  // namespace dpt::gemm

#else

#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/gemm/avx512_store.hpp"
#include "backend/cpu/gemm/pack_avx512.hpp"

#define DPT_AMX __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma,amx-tile,amx-bf16")))

namespace dpt::gemm {

namespace {

constexpr size_t kMR = 32, kNR = 32, kK = 32;

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

DPT_AMX void begin() {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = 16;
    config.bytes_per_row[t] = 64;
  }
  // GCC 12 does not see that ldtilecfg reads the whole structure and drops the stores above without this.
  __asm__ volatile("" : : "m"(config) : "memory");
  _tile_loadconfig(&config);
}

DPT_AMX void end() {
  _tile_release();
}

// The packers: pack_avx512.hpp's (every CPU with AMX has AVX-512). A: panel[kb][r][kk], k = 32 kb + kk;
// B: the VDPBF16PS kernel's pairs, k padded to 32.
void pack_a(const Operand &a, size_t i0, size_t rows, size_t p0, size_t kc, void *out) {
  if (a.trans)
    pack_amx_a_cols(a, i0, rows, p0, kc, out);
  else
    pack_amx_a_rows(a, i0, rows, p0, kc, out);
}

void pack_b(const Operand &b, size_t p0, size_t kc, size_t j0, size_t cols, void *out) {
  if (b.trans)
    pack_pairs_b32_cols(b, p0, kc, j0, cols, out, kK);
  else
    pack_pairs_b32_rows(b, p0, kc, j0, cols, out, kK);
}

DPT_AMX void tile(size_t kc, const void *ap, const void *bp, float *c, size_t ldc, float alpha, float beta) {
  const char *a = static_cast<const char *>(ap), *b = static_cast<const char *>(bp);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (size_t kb = 0; kb < kc; kb += kK, a += kMR * kK * 2, b += kK / 2 * kNR * 4) {
    _tile_loadd(4, a, 64);
    _tile_loadd(5, a + 16 * 64, 64);
    _tile_loadd(6, b, 128);
    _tile_loadd(7, b + 64, 128);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  alignas(64) float acc[kMR][kNR];
  _tile_stored(0, &acc[0][0], kNR * 4);
  _tile_stored(1, &acc[0][16], kNR * 4);
  _tile_stored(2, &acc[16][0], kNR * 4);
  _tile_stored(3, &acc[16][16], kNR * 4);
  for (size_t i = 0; i < kMR; ++i)
    store_row(_mm512_load_ps(&acc[i][0]), _mm512_load_ps(&acc[i][16]), c + i * ldc, alpha, beta);
}

}  // namespace

const KernelDef kBF16Amx{kMR, kNR, kK, 512, 2, 2, pack_a, pack_b, tile, begin, end};

}  // namespace dpt::gemm

#endif  // _WIN32
