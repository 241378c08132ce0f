// Thin row-major GEMM wrappers over OpenBLAS's CBLAS.
#pragma once

#include <cstddef>

namespace dpt::blas {

// OpenBLAS must not spawn its own threads: the devices already run in parallel.
void use_single_thread();

// C[m x n] = alpha * op(A) * op(B) + beta * C, all row-major; op(A) is m x k, op(B) is k x n.
void gemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
          const float *b, size_t ldb, float beta, float *c, size_t ldc);

}  // namespace dpt::blas
