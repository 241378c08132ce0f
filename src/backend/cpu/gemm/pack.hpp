// Packers shared by the kernels: op(A) and op(B) blocks into the panels a micro-kernel reads in order.
// float32: panel[p][r] (k-major, mr or nr wide); float16 kernels: A (and the portable kernel's B) as
// float32 values rounded through float16, the AVX-512 kernel's B as float16, all in float32's layout.
// bfloat16 pairs (VDPBF16PS and AMX's B, and the B of the AVX-512F kernel that emulates VDPBF16PS):
// panel[q][r][h] = element k = 2q + h, so that a 32-bit word holds the pair a dot-product instruction
// multiplies; that kernel's A as float32 values rounded through bfloat16. AMX's A: panel[kb][r][kk], 32
// consecutive k of a row (one 64-byte tile row). Zeros past every end.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backend/cpu/gemm/kernels.hpp"
#include "core/float16.hpp"

namespace dpt::gemm {

// Element (r, c) of op(X) for r < rows and c < cols, else zero: X's storage read with the transposition
// hoisted out of the loops that call it.
struct Reader {
  const float *data;
  size_t row_step, col_step;  // between neighbours of op(X) along r and along c
  Reader(const Operand &x, size_t r0, size_t c0)
      : data(x.data + (x.trans ? c0 * x.ld + r0 : r0 * x.ld + c0)),
        row_step(x.trans ? 1 : x.ld),
        col_step(x.trans ? x.ld : 1) {}
  const float *at(size_t r, size_t c) const { return data + r * row_step + c * col_step; }
};

// A rows x kc block of op(A) at (i0, p0) as panels of MR rows: panel[p][i], k padded with zeros to a
// multiple of KUnit.
template <size_t MR, size_t KUnit = 1>
void pack_f32_a(const Operand &a, size_t i0, size_t rows, size_t p0, size_t kc, void *out) {
  const Reader x(a, i0, p0);
  float *o = static_cast<float *>(out);
  const size_t kp = (kc + KUnit - 1) / KUnit * KUnit;
  for (size_t i = 0; i < rows; i += MR, o += kp * MR) {
    const size_t h = rows - i < MR ? rows - i : MR;
    for (size_t r = 0; r < MR; ++r) {
      const float *src = x.at(i + r, 0);
      for (size_t p = 0; p < kc; ++p) o[p * MR + r] = r < h ? src[p * x.col_step] : 0.0f;
    }
    std::fill(o + kc * MR, o + kp * MR, 0.0f);
  }
}

// A kc x cols block of op(B) at (p0, j0) as panels of NR columns: panel[p][j].
template <size_t NR>
void pack_f32_b(const Operand &b, size_t p0, size_t kc, size_t j0, size_t cols, void *out) {
  const Reader x(b, p0, j0);
  float *o = static_cast<float *>(out);
  for (size_t j = 0; j < cols; j += NR) {
    const size_t w = cols - j < NR ? cols - j : NR;
    for (size_t p = 0; p < kc; ++p, o += NR) {
      const float *src = x.at(p, j);
      if (x.col_step == 1 && w == NR) {
        std::memcpy(o, src, NR * sizeof(float));
        continue;
      }
      for (size_t r = 0; r < NR; ++r) o[r] = r < w ? src[r * x.col_step] : 0.0f;
    }
  }
}

// As pack_f32_a, each value rounded to float16 (and held as the float32 of that float16, so that the
// kernel broadcasts it without a conversion).
template <size_t MR>
void pack_f16_a(const Operand &a, size_t i0, size_t rows, size_t p0, size_t kc, void *out) {
  pack_f32_a<MR>(a, i0, rows, p0, kc, out);
  float *o = static_cast<float *>(out);
  const size_t count = (rows + MR - 1) / MR * MR * kc;
  for (size_t i = 0; i < count; ++i) o[i] = from_f16(to_f16(o[i]));
}

// As pack_f32_b, each value rounded to float16 and held as float32 (the portable kernel's B).
template <size_t NR>
void pack_f16_b_wide(const Operand &b, size_t p0, size_t kc, size_t j0, size_t cols, void *out) {
  pack_f32_b<NR>(b, p0, kc, j0, cols, out);
  float *o = static_cast<float *>(out);
  const size_t count = (cols + NR - 1) / NR * NR * kc;
  for (size_t i = 0; i < count; ++i) o[i] = from_f16(to_f16(o[i]));
}

// As pack_f32_b, in float16: panel[p][j]: the AVX-512 kernel's B (pack_f16_b32_rows and _cols write it
// faster; test_gemm holds them to this).
template <size_t NR>
void pack_f16_b(const Operand &b, size_t p0, size_t kc, size_t j0, size_t cols, void *out) {
  const Reader x(b, p0, j0);
  uint16_t *o = static_cast<uint16_t *>(out);
  for (size_t j = 0; j < cols; j += NR) {
    const size_t w = cols - j < NR ? cols - j : NR;
    for (size_t p = 0; p < kc; ++p, o += NR) {
      const float *src = x.at(p, j);
      for (size_t r = 0; r < NR; ++r) o[r] = to_f16(r < w ? src[r * x.col_step] : 0.0f);
    }
  }
}

// As pack_f32_a, in bfloat16 pairs of k: panel[q][i][h], k = 2q + h (kc padded to even).
template <size_t MR>
void pack_pairs_a(const Operand &a, size_t i0, size_t rows, size_t p0, size_t kc, void *out) {
  const Reader x(a, i0, p0);
  uint16_t *o = static_cast<uint16_t *>(out);
  const size_t kp = (kc + 1) / 2 * 2;
  for (size_t i = 0; i < rows; i += MR, o += kp * MR) {
    const size_t h = rows - i < MR ? rows - i : MR;
    for (size_t r = 0; r < MR; ++r) {
      const float *src = x.at(i + r, 0);
      for (size_t p = 0; p < kp; ++p)
        o[(p / 2 * MR + r) * 2 + p % 2] = to_bf16(r < h && p < kc ? src[p * x.col_step] : 0.0f);
    }
  }
}

// As pack_f32_a, each value rounded to bfloat16 and held as the float32 of that bfloat16 (a kernel that
// broadcasts it as a float32 operand), kc padded to even with zeros (the pairs of the B panel).
template <size_t MR>
void pack_bf16_a_wide(const Operand &a, size_t i0, size_t rows, size_t p0, size_t kc, void *out) {
  pack_f32_a<MR, 2>(a, i0, rows, p0, kc, out);
  float *o = static_cast<float *>(out);
  const size_t count = (rows + MR - 1) / MR * MR * ((kc + 1) / 2 * 2);
  for (size_t e = 0; e < count; ++e) o[e] = round_to_bf16(o[e]);  // contiguous: it vectorizes
}

// As pack_f32_b, in bfloat16 pairs of k: panel[q][j][h]; k padded to a multiple of k_unit.
template <size_t NR>
void pack_pairs_b(const Operand &b, size_t p0, size_t kc, size_t j0, size_t cols, void *out, size_t k_unit) {
  const Reader x(b, p0, j0);
  uint16_t *o = static_cast<uint16_t *>(out);
  const size_t kp = (kc + k_unit - 1) / k_unit * k_unit;
  for (size_t j = 0; j < cols; j += NR) {
    const size_t w = cols - j < NR ? cols - j : NR;
    for (size_t p = 0; p < kp; p += 2, o += 2 * NR) {
      const float *even = x.at(p, j), *odd = x.at(p + 1, j);
      const bool has_even = p < kc, has_odd = p + 1 < kc;
      if (x.col_step == 1 && w == NR && has_odd) {
        for (size_t r = 0; r < NR; ++r) {
          o[2 * r] = to_bf16(even[r]);
          o[2 * r + 1] = to_bf16(odd[r]);
        }
        continue;
      }
      for (size_t r = 0; r < NR; ++r) {
        o[2 * r] = to_bf16(r < w && has_even ? even[r * x.col_step] : 0.0f);
        o[2 * r + 1] = to_bf16(r < w && has_odd ? odd[r * x.col_step] : 0.0f);
      }
    }
  }
}

}  // namespace dpt::gemm
