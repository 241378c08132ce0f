#include "backend/cpu/ops/blas.hpp"

#if DPTRAIN_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include <mutex>

namespace dpt::blas {

void use_single_thread() {
#if DPTRAIN_HAVE_OPENBLAS
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
#endif
}

void gemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, float alpha, const float *a, size_t lda,
          const float *b, size_t ldb, float beta, float *c, size_t ldc, gemm::Precision precision) {
  gemm::gemm(precision, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace dpt::blas
