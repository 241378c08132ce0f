// One-line error messages of the CUDA module, written into the caller's buffer (nothing is thrown or
// allocated across the module boundary), and a guard that switches the calling thread's current device.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace dpt::cuda {

// Writes printf-style text into error[0 .. size) on one line; returns 1, so `return fail(...)` reports
// failure.
int fail(char *error, size_t size, const char *format, ...) __attribute__((format(printf, 3, 4)));

// "error 35, cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version"
void describe(cudaError_t status, char *text, size_t size);

// Makes ordinal the calling thread's current device and restores the previous one on destruction, so a
// query never changes the caller's device.
class DeviceGuard {
 public:
  explicit DeviceGuard(int ordinal);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;
  cudaError_t status() const { return status_; }

 private:
  int previous_ = -1;
  cudaError_t status_ = cudaSuccess;
};

}  // namespace dpt::cuda
