// The AVX-512 kernels' epilogue: one row of 32 results into C, as kernels.hpp's combine() lane by lane.
#pragma once

#include <immintrin.h>

#define DPT_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma")))

namespace dpt::gemm {

// c[0, 32) = alpha * acc + beta * c (beta == 0: c is not read).
DPT_AVX512 inline void store_row(__m512 acc0, __m512 acc1, float *c, float alpha, float beta) {
  const __m512 va = _mm512_set1_ps(alpha);
  __m512 r0 = _mm512_mul_ps(va, acc0), r1 = _mm512_mul_ps(va, acc1);
  if (beta != 0.0f) {
    const __m512 vb = _mm512_set1_ps(beta);
    r0 = _mm512_add_ps(r0, _mm512_mul_ps(vb, _mm512_loadu_ps(c)));
    r1 = _mm512_add_ps(r1, _mm512_mul_ps(vb, _mm512_loadu_ps(c + 16)));
  }
  _mm512_storeu_ps(c, r0);
  _mm512_storeu_ps(c + 16, r1);
}

}  // namespace dpt::gemm
