#include "backend/cpu/cpu_kernels.hpp"

#include <cstring>

namespace dpt {

void CpuKernels::copy_to_device(float *device, const float *host, size_t count) {
  if (count != 0 && device != host) std::memcpy(device, host, count * sizeof(float));
}

void CpuKernels::copy_labels_to_device(int32_t *device, const int32_t *host, size_t count) {
  if (count != 0 && device != host) std::memcpy(device, host, count * sizeof(int32_t));
}

void CpuKernels::copy_to_host(float *host, const float *device, size_t count) {
  if (count != 0 && device != host) std::memcpy(host, device, count * sizeof(float));
}

}  // namespace dpt
