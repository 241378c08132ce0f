// AVX-512 versions of pack.hpp's packers for the bf16 kernels' operands and the float32 kernel's B. Stored
// row by row along the packed dimension (op(B) not transposed: k rows of n; AMX's op(A) not transposed: m
// rows of k) they read the source row by row and convert 16 floats at a time; transposed, they gather
// (pairs of k for B, 16 k at a time for AMX's A). They write exactly pack.hpp's panels: the same bits
// (to_bf16's rounding, done on 32-bit lanes; to_f16's is VCVTPS2PH's). Call them only where
// cpu_features().avx512 holds.
#pragma once

#include <cstddef>

#include "backend/cpu/gemm/kernels.hpp"

namespace dpt::gemm {

// pack_f32_b<32> for op(B) not transposed.
void pack_f32_b32_rows(const Operand &b, size_t p0, size_t kc, size_t j0, size_t cols, void *out);
// pack_f16_b<32> for op(B) not transposed.
void pack_f16_b32_rows(const Operand &b, size_t p0, size_t kc, size_t j0, size_t cols, void *out);
// pack_f16_b<32> for op(B) transposed.
void pack_f16_b32_cols(const Operand &b, size_t p0, size_t kc, size_t j0, size_t cols, void *out);
// x[i] = from_f16(to_f16(x[i])) (core/float16.hpp), 16 at a time: pack_f16_a's rounding.
void round_f16_in_place(float *x, size_t count);
// pack_pairs_b<32>(..., k_unit) for op(B) not transposed.
void pack_pairs_b32_rows(const Operand &b, size_t p0, size_t kc, size_t j0, size_t cols, void *out,
                         size_t k_unit);
// pack_pairs_b<32>(..., k_unit) for op(B) transposed.
void pack_pairs_b32_cols(const Operand &b, size_t p0, size_t kc, size_t j0, size_t cols, void *out,
                         size_t k_unit);
// pack_pairs_a<12> (the AVX-512 bf16 kernel's A) for op(A) not transposed, and transposed.
void pack_pairs_a12_rows(const Operand &a, size_t i0, size_t rows, size_t p0, size_t kc, void *out);
void pack_pairs_a12_cols(const Operand &a, size_t i0, size_t rows, size_t p0, size_t kc, void *out);
// AMX's A panels (kernels_amx.cpp): 32 rows, k in blocks of 32; op(A) not transposed, and transposed.
void pack_amx_a_rows(const Operand &a, size_t i0, size_t rows, size_t p0, size_t kc, void *out);
void pack_amx_a_cols(const Operand &a, size_t i0, size_t rows, size_t p0, size_t kc, void *out);

}  // namespace dpt::gemm
