// The pieces of one GEMM kernel: its tile (MR x NR), how many k it takes at a time, its packers and its
// micro-kernel. gemm.cpp drives them; kernels_*.cpp define them, one file per instruction set.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dpt::gemm {

// Where op(A) (m x k) or op(B) (k x n) is: element (r, c) of the operand at data[r * ld + c], or at
// data[c * ld + r] when transposed. Or, with bf16 set (data unused), bfloat16 values there (gemm_bf16):
// only the packers of a kernel that reads_bf16 see such an operand; gemm.cpp widens it for the others.
struct Operand {
  const float *data;
  size_t ld;
  bool trans;
  const uint16_t *bf16 = nullptr;
  float at(size_t r, size_t c) const { return trans ? data[c * ld + r] : data[r * ld + c]; }
};

struct KernelDef {
  size_t mr, nr;            // the tile of C
  size_t k_unit;            // k is padded with zeros to a multiple of this (pairs of bf16, AMX's 32)
  size_t kc;                // k per block (a multiple of k_unit)
  size_t a_bytes, b_bytes;  // per packed element of A's and of B's panels
  // Packs rows [i0, i0 + rows) and k [p0, p0 + kc) of op(A) into ceil(rows / mr) panels, each of
  // padded(kc) x mr elements, zero-filled past the ends; likewise columns [j0, j0 + cols) of op(B) into
  // panels of padded(kc) x nr.
  void (*pack_a)(const Operand &a, size_t i0, size_t rows, size_t p0, size_t kc, void *out);
  void (*pack_b)(const Operand &b, size_t p0, size_t kc, size_t j0, size_t cols, void *out);
  // c (mr x nr, row stride ldc) = alpha * (A panel x B panel over padded kc) + beta * c; beta == 0 does
  // not read c.
  void (*tile)(size_t kc, const void *a, const void *b, float *c, size_t ldc, float alpha, float beta);
  // Around a gemm call on a thread (AMX's tile configuration); may be null.
  void (*begin)();
  void (*end)();
  // The packers take bfloat16 operands (Operand::bf16) too, rounding their values as float32 ones'.
  bool reads_bf16 = false;
};

size_t padded(const KernelDef &d, size_t kc);

// c = alpha * acc + beta * c (beta == 0: c = alpha * acc), each product rounded on its own: the epilogue
// every kernel applies, so that their bits agree where their sums do.
inline float combine(float acc, float alpha, float beta, float c) {
  const float scaled = alpha * acc;
  return beta == 0.0f ? scaled : scaled + beta * c;
}

extern const KernelDef kF32Portable, kBF16Portable, kF16Portable;
extern const KernelDef kF32Avx512, kBF16Avx512, kF16Avx512;
extern const KernelDef kBF16Avx512F;
extern const KernelDef kBF16Amx;

}  // namespace dpt::gemm
