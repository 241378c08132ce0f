/* The checks of the mpirun tests in C: a failed CHECK prints where and why and counts; main sums the counts
 * over the processes (MPI_Allreduce) and exits non-zero if any process failed. OK(call) checks for DPT_OK
 * and prints the library's message. */
#ifndef DPTRAIN_TESTS_MPI_CHECK_H
#define DPTRAIN_TESTS_MPI_CHECK_H

#include <stdio.h>

static int failures = 0;
#define CHECK(cond, ...)                                     \
  do {                                                       \
    if (!(cond)) {                                           \
      fprintf(stderr, "FAILED %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                          \
      fprintf(stderr, "\n");                                 \
      ++failures;                                            \
    }                                                        \
  } while (0)
#define OK(call) CHECK((call) == DPT_OK, "%s: %s", #call, dpt_last_error_message())

#endif /* DPTRAIN_TESTS_MPI_CHECK_H */
