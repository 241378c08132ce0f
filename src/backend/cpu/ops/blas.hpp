// The CPU kernels' matrix products: row-major GEMM over dptrain's own kernels (src/backend/cpu/gemm),
// with OpenBLAS where the CPU has no AVX-512 (gemm.hpp says which runs where).
#pragma once

#include <cstddef>

#include "backend/cpu/gemm/gemm.hpp"
#include "interface/op_call.h"

namespace dpt::blas {

// OpenBLAS must not spawn its own threads: the devices already run in parallel.
void use_single_thread();

// C[m x n] = alpha * op(A) * op(B) + beta * C, all row-major; op(A) is m x k, op(B) is k x n. precision: the
// products' inputs (bfloat16 or float16: rounded from float32), accumulated in float32.
void gemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
          const float *b, size_t ldb, float beta, float *c, size_t ldc,
          gemm::Precision precision = gemm::Precision::kF32);

// The precision of a call's matrix products (dpt_op_call::matmul_dtype).
inline gemm::Precision precision_of(const dpt_op_call &call) {
  return call.matmul_dtype == DPT_DTYPE_BF16  ? gemm::Precision::kBF16
         : call.matmul_dtype == DPT_DTYPE_F16 ? gemm::Precision::kF16
                                              : gemm::Precision::kF32;
}

}  // namespace dpt::blas
