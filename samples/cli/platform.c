/* Clock and terminal detection for POSIX and Windows. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* clock_gettime, fileno, isatty under -std=c99 */
#endif

#include "platform.h"

#if defined(_WIN32)
#include <io.h>
#include <windows.h>

double platform_now_seconds(void) {
  LARGE_INTEGER frequency, counter;
  QueryPerformanceFrequency(&frequency);
  QueryPerformanceCounter(&counter);
  return (double)counter.QuadPart / (double)frequency.QuadPart;
}

int platform_is_terminal(FILE *stream) {
  return _isatty(_fileno(stream));
}

#else
#include <time.h>
#include <unistd.h>

double platform_now_seconds(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

int platform_is_terminal(FILE *stream) {
  return isatty(fileno(stream));
}
#endif

#include <stdlib.h>

int platform_launched_by_mpi(void) {
  static const char *const kVariables[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                                           "MPI_LOCALNRANKS"};
  size_t i;
  for (i = 0; i < sizeof kVariables / sizeof kVariables[0]; ++i)
    if (getenv(kVariables[i]) != NULL) return 1;
  return 0;
}

int platform_local_rank(unsigned long long *rank) {
  static const char *const kVariables[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK",
                                           "SLURM_LOCALID"};
  size_t i;
  for (i = 0; i < sizeof kVariables / sizeof kVariables[0]; ++i) {
    const char *value = getenv(kVariables[i]);
    char *end = NULL;
    if (value == NULL || *value == '\0') continue;
    *rank = strtoull(value, &end, 10);
    return *end == '\0';
  }
  return 0;
}

FILE *platform_null_output(void) {
#if defined(_WIN32)
  return fopen("NUL", "w");
#else
  return fopen("/dev/null", "w");
#endif
}
