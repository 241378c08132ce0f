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
