/*
 * The few POSIX calls of the C API tests, also for Windows (the mingw-w64 build runs them under Wine,
 * docs/windows.md). Include after the system headers.
 */
#ifndef DPTRAIN_TESTS_CAPI_PORTABLE_H
#define DPTRAIN_TESTS_CAPI_PORTABLE_H

#include <stdlib.h>
#include <sys/stat.h>

#if defined(_WIN32)
#include <direct.h>
#include <process.h>
/* Windows has no FIFOs: the cases that refuse one are POSIX-only. */
#define TEST_HAVE_FIFO 0
static inline int test_setenv(const char *name, const char *value) {
  return _putenv_s(name, value);
}
/* An empty value removes the variable from the C runtime's environment, which the DLL shares. */
static inline int test_unsetenv(const char *name) {
  return _putenv_s(name, "");
}
static inline int test_mkdir(const char *path) {
  return _mkdir(path);
}
#else
#include <unistd.h>
#define TEST_HAVE_FIFO 1
static inline int test_setenv(const char *name, const char *value) {
  return setenv(name, value, 1);
}
static inline int test_unsetenv(const char *name) {
  return unsetenv(name);
}
static inline int test_mkdir(const char *path) {
  return mkdir(path, 0700);
}
#endif

#endif /* DPTRAIN_TESTS_CAPI_PORTABLE_H */
