/* The equivalence metric of the tests: ||a - ref|| / ||ref - start||, the error relative to how far training
 * has moved the parameters (not to their size, which the shared initialisation dominates). The tolerance of
 * the numerics contract is 1e-5. Plain C, no test framework: used by the CMocka tests and the mpirun tests.
 */
#ifndef DPTRAIN_TESTS_CAPI_RELATIVE_ERROR_H
#define DPTRAIN_TESTS_CAPI_RELATIVE_ERROR_H

#include <math.h>
#include <stddef.h>

static inline double tu_relative_error(const float *a, const float *ref, const float *start, size_t n) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < n; ++i) {
    diff += ((double)a[i] - ref[i]) * ((double)a[i] - ref[i]);
    norm += ((double)ref[i] - start[i]) * ((double)ref[i] - start[i]);
  }
  return sqrt(diff) / sqrt(norm);
}

#endif /* DPTRAIN_TESTS_CAPI_RELATIVE_ERROR_H */
