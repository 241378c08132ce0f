/* Error reporting: one line on stderr per error, and the exit status that goes with it. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cli_usage_error(const char *format, ...) {
  va_list args;
  va_start(args, format);
  fputs("dptrain: error: ", stderr);
  vfprintf(stderr, format, args);
  fputc('\n', stderr);
  va_end(args);
  return CLI_EXIT_USAGE;
}

int cli_library_error(dpt_status status) {
  const char *detail = dpt_last_error_message();
  fprintf(stderr, "dptrain: error: %s", dpt_status_string(status));
  /* The detail may be empty when a call fails without one; keep the line clean then. */
  if (detail != NULL && detail[0] != '\0') fprintf(stderr, ": %s", detail);
  fputc('\n', stderr);
  return CLI_EXIT_FAILURE;
}

int cli_system_error(const char *what, const char *path) {
  int saved = errno;
  fprintf(stderr, "dptrain: error: %s '%s': %s\n", what, path, strerror(saved));
  return CLI_EXIT_FAILURE;
}
