// Status strings, the thread-local error message and the version.
#include <dptrain/status.h>
#include <dptrain/version.h>

#include <cstdio>
#include <cstring>

#include "api_support.hpp"

namespace dpt::capi {

namespace {
// A fixed buffer, not a std::string: recording an out-of-memory error must not allocate.
constexpr size_t kMessageCapacity = 1024;
thread_local char last_error[kMessageCapacity];
}  // namespace

void set_last_error(const char *function, const char *prefix, const char *message) noexcept {
  std::snprintf(last_error, sizeof last_error, "%s: %s%s", function, prefix, message);
  for (char *c = last_error; *c != '\0'; ++c)
    if (*c == '\n' || *c == '\r') *c = ' ';  // the message is one line by contract
}

}  // namespace dpt::capi

extern "C" {

const char *dpt_status_string(dpt_status status) {
  int raw;  // read as int: a caller may pass any value, and an out-of-range enum load is undefined
  std::memcpy(&raw, &status, sizeof raw);
  switch (raw) {
    case DPT_OK:
      return "ok";
    case DPT_ERROR_INVALID_ARGUMENT:
      return "invalid argument";
    case DPT_ERROR_NULL_POINTER:
      return "null pointer";
    case DPT_ERROR_OUT_OF_RANGE:
      return "out of range";
    case DPT_ERROR_SIZE_MISMATCH:
      return "size mismatch";
    case DPT_ERROR_INVALID_STATE:
      return "invalid state";
    case DPT_ERROR_BUFFER_TOO_SMALL:
      return "buffer too small";
    case DPT_ERROR_NON_FINITE:
      return "non-finite value";
    case DPT_ERROR_BUSY:
      return "busy";
    case DPT_ERROR_UNSUPPORTED:
      return "unsupported";
    case DPT_ERROR_DEVICE:
      return "device error";
    case DPT_ERROR_OUT_OF_MEMORY:
      return "out of memory";
    case DPT_ERROR_DEVICE_NOT_FOUND:
      return "device not found";
    case DPT_ERROR_COMMUNICATION:
      return "communication error";
    case DPT_ERROR_TIMEOUT:
      return "timeout";
    case DPT_ERROR_IO:
      return "i/o error";
    case DPT_ERROR_FORMAT:
      return "format error";
    case DPT_ERROR_INTERNAL:
      return "internal error";
  }
  return "unknown status";
}

int dpt_status_category(dpt_status status) {
  return int(status) < 0 ? 0 : int(status) / 1000 * 1000;
}

const char *dpt_last_error_message(void) {
  return dpt::capi::last_error;
}

unsigned dpt_version_number(void) {
  return DPT_VERSION_NUMBER;
}

const char *dpt_version_string(void) {
#define DPT_STR2(x) #x
#define DPT_STR(x) DPT_STR2(x)
  return DPT_STR(DPT_VERSION_MAJOR) "." DPT_STR(DPT_VERSION_MINOR) "." DPT_STR(DPT_VERSION_PATCH);
}

}  // extern "C"
