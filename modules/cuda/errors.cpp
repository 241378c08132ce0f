#include "cuda/errors.hpp"

#include <cstdarg>
#include <cstdio>

namespace dpt::cuda {

int fail(char *error, size_t size, const char *format, ...) {
  if (error == nullptr || size == 0) return 1;
  va_list args;
  va_start(args, format);
  std::vsnprintf(error, size, format, args);
  va_end(args);
  for (char *c = error; *c != '\0'; ++c)
    if (*c == '\n' || *c == '\r') *c = ' ';
  return 1;
}

void describe(cudaError_t status, char *text, size_t size) {
  std::snprintf(text, size, "error %d, %s: %s", int(status), cudaGetErrorName(status),
                cudaGetErrorString(status));
}

DeviceGuard::DeviceGuard(int ordinal) {
  if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
  status_ = cudaSetDevice(ordinal);
  if (status_ != cudaSuccess) cudaGetLastError();  // not sticky: clear it for the caller's next call
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) cudaSetDevice(previous_);
}

}  // namespace dpt::cuda
