/*
 * Shared helpers for the CMocka tests of the dptrain C API.
 *
 * Include after <cmocka.h> and <dptrain/dptrain.h>. Every helper is `static inline` so that a test that
 * does not use one gets no unused-function warning.
 */
#ifndef DPTRAIN_TESTS_CAPI_TEST_UTIL_H
#define DPTRAIN_TESTS_CAPI_TEST_UTIL_H

#include <stdio.h>
#include <string.h>

/*
 * Expected outcomes. A non-negative value is one exact dpt_status. The negative values below name
 * small sets, used only where two codes are equally defensible readings of the headers (each use says
 * why); everything else asserts one specific code.
 */
/** A length that overflows size_t: the call must fail, as a size mismatch or a bad value. */
#define WANT_OVERFLOW (-1)
/** A dataset whose sample shape does not match the model: a size mismatch or a bad argument. */
#define WANT_SHAPE (-2)
/** A dataset with more classes (labels) than the model has outputs: out of range, a bad argument, or a
 * size mismatch (class count vs output size). */
#define WANT_CLASSES (-3)
/** A damaged file: bad content, or a read that ran into the end of the file. */
#define WANT_FORMAT_OR_IO (-4)
/** A huge value (product overflows, or absurdly large): a bad value or out of range. */
#define WANT_TOO_BIG (-5)

static inline int tu_status_matches(dpt_status got, int want) {
  switch (want) {
    case WANT_OVERFLOW:
      return got == DPT_ERROR_SIZE_MISMATCH || got == DPT_ERROR_INVALID_ARGUMENT ||
             got == DPT_ERROR_OUT_OF_RANGE;
    case WANT_SHAPE:
      return got == DPT_ERROR_SIZE_MISMATCH || got == DPT_ERROR_INVALID_ARGUMENT;
    case WANT_CLASSES:
      return got == DPT_ERROR_OUT_OF_RANGE || got == DPT_ERROR_INVALID_ARGUMENT ||
             got == DPT_ERROR_SIZE_MISMATCH;
    case WANT_FORMAT_OR_IO:
      return got == DPT_ERROR_FORMAT || got == DPT_ERROR_IO;
    case WANT_TOO_BIG:
      return got == DPT_ERROR_INVALID_ARGUMENT || got == DPT_ERROR_OUT_OF_RANGE;
    default:
      return (int)got == want;
  }
}

static inline const char *tu_want_text(int want, char *buffer, size_t capacity) {
  switch (want) {
    case WANT_OVERFLOW:
      return "SIZE_MISMATCH|INVALID_ARGUMENT|OUT_OF_RANGE";
    case WANT_SHAPE:
      return "SIZE_MISMATCH|INVALID_ARGUMENT";
    case WANT_CLASSES:
      return "OUT_OF_RANGE|INVALID_ARGUMENT|SIZE_MISMATCH";
    case WANT_FORMAT_OR_IO:
      return "FORMAT|IO";
    case WANT_TOO_BIG:
      return "INVALID_ARGUMENT|OUT_OF_RANGE";
    default:
      snprintf(buffer, capacity, "%d (%s)", want, dpt_status_string((dpt_status)want));
      return buffer;
  }
}

/**
 * Checks that dpt_last_error_message() is a non-empty single line. Returns the number of problems
 * (printed with @p what as the label).
 */
static inline int tu_check_message(const char *what, const char *file, int line) {
  const char *message = dpt_last_error_message();
  if (message == NULL) {
    print_error("%s:%d: %s: dpt_last_error_message() returned NULL\n", file, line, what);
    return 1;
  }
  if (message[0] == '\0') {
    print_error("%s:%d: %s: failed with an empty dpt_last_error_message()\n", file, line, what);
    return 1;
  }
  if (strchr(message, '\n') != NULL || strchr(message, '\r') != NULL) {
    print_error("%s:%d: %s: dpt_last_error_message() is not one line: \"%s\"\n", file, line, what, message);
    return 1;
  }
  return 0;
}

/**
 * Non-fatal status check: prints every problem and returns how many there were. On an expected
 * failure also checks the error message.
 */
static inline int tu_check_status(dpt_status got, int want, const char *what, const char *file, int line) {
  char want_buffer[64];
  if (!tu_status_matches(got, want)) {
    const char *message = got == DPT_OK ? "(none: the call succeeded)" : dpt_last_error_message();
    print_error("%s:%d: %s\n    returned %d (%s), expected %s; message: %s\n", file, line, what, (int)got,
                dpt_status_string(got), tu_want_text(want, want_buffer, sizeof want_buffer),
                message ? message : "(NULL)");
    return 1;
  }
  if (want != DPT_OK) return tu_check_message(what, file, line);
  return 0;
}

/** Fatal status check: fails the current test on a mismatch. */
#define EXPECT_STATUS(want, call)                                                              \
  do {                                                                                         \
    if (tu_check_status((call), (want), #call, __FILE__, __LINE__)) _fail(__FILE__, __LINE__); \
  } while (0)

/** Fatal check that a call succeeds. */
#define ASSERT_OK(call) EXPECT_STATUS(DPT_OK, call)

/** FNV-1a 64-bit hash of @p size bytes (the checksum dpt_trainer_parameter_checksum() documents). */
static inline uint64_t tu_fnv1a64(const void *data, size_t size) {
  const unsigned char *bytes = (const unsigned char *)data;
  uint64_t hash = UINT64_C(14695981039346656037);
  size_t i;
  for (i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= UINT64_C(1099511628211);
  }
  return hash;
}

#endif /* DPTRAIN_TESTS_CAPI_TEST_UTIL_H */
