#include "backend/cpu/cpu_device.hpp"

#include "backend/cpu/cpu_kernels.hpp"
#include "backend/cpu/ops/blas.hpp"
#include "core/platform.hpp"

namespace dpt {

namespace {
// Each device runs its own GEMMs and devices run in parallel, so BLAS is set single-threaded first.
int single_thread_blas(int pin_cpu) {
  blas::use_single_thread();
  return pin_cpu;
}
}  // namespace

CpuDevice::CpuDevice(size_t ordinal, uint64_t memory_limit, int pin_cpu)
    : ordinal_(ordinal),
      name_("cpu:" + std::to_string(ordinal)),
      arena_(name_, memory_limit),
      worker_(single_thread_blas(pin_cpu)) {}

uint64_t CpuDevice::total_memory() const {
  return arena_.limit() != 0 ? arena_.limit() : platform::host_memory_bytes();
}

std::unique_ptr<DeviceKernels> CpuDevice::create_kernels(const KernelOptions &) {
  return std::make_unique<CpuKernels>(arena_);
}

}  // namespace dpt
