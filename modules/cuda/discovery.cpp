#include "cuda/discovery.hpp"

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cuda/errors.hpp"

namespace dpt::cuda {

namespace {

// "13.0" from the CUDA encoding 1000 * major + 10 * minor; "none" for 0.
void format_cuda_version(int version, char *text, size_t size) {
  if (version <= 0)
    std::snprintf(text, size, "none");
  else
    std::snprintf(text, size, "%d.%d", version / 1000, (version % 1000) / 10);
}

// Why cudaGetDeviceCount failed, in words a user can act on.
int explain_count_failure(cudaError_t status, char *error, size_t size) {
  char what[256];
  describe(status, what, sizeof what);
  int driver = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  char driver_text[16], runtime_text[16];
  format_cuda_version(driver, driver_text, sizeof driver_text);
  format_cuda_version(runtime, runtime_text, sizeof runtime_text);
  const char *visible = std::getenv("CUDA_VISIBLE_DEVICES");
  switch (status) {
    case cudaErrorInsufficientDriver:
      if (driver == 0) return fail(error, size, "CUDA driver not found (cudaGetDeviceCount: %s)", what);
      return fail(error, size, "CUDA driver %s is too old for CUDA runtime %s (cudaGetDeviceCount: %s)",
                  driver_text, runtime_text, what);
    case cudaErrorNoDevice:
      if (visible != nullptr)
        return fail(error, size, "no CUDA GPU found with CUDA_VISIBLE_DEVICES='%s' (cudaGetDeviceCount: %s)",
                    visible, what);
      return fail(error, size, "no CUDA GPU found (cudaGetDeviceCount: %s)", what);
    case cudaErrorStubLibrary:
      return fail(
          error, size,
          "the CUDA driver stub library was loaded instead of the driver: remove .../lib64/stubs from the "
          "library path (cudaGetDeviceCount: %s)",
          what);
    default:
      return fail(error, size, "CUDA is not usable (cudaGetDeviceCount: %s; driver %s, runtime %s)", what,
                  driver_text, runtime_text);
  }
}

}  // namespace

int device_count(int *count, char *error, size_t error_size) {
  *count = 0;
  int n = 0;  // cudaGetDeviceCount leaves it unwritten when it fails
  const cudaError_t status = cudaGetDeviceCount(&n);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return explain_count_failure(status, error, error_size);
  }
  if (n <= 0) return fail(error, error_size, "no CUDA GPU found (cudaGetDeviceCount returned 0)");
  *count = n;
  return 0;
}

int device_props(int ordinal, dpt_backend_device_props *props, char *error, size_t error_size) {
  std::memset(props, 0, sizeof *props);
  char what[256];
  cudaDeviceProp p;
  cudaError_t status = cudaGetDeviceProperties(&p, ordinal);
  if (status != cudaSuccess) {
    describe(status, what, sizeof what);
    return fail(error, error_size, "cuda:%d: cudaGetDeviceProperties: %s", ordinal, what);
  }
  std::snprintf(props->name, sizeof props->name, "%s", p.name);
  props->total_memory = p.totalGlobalMem;
  props->compute_capability_major = p.major;
  props->compute_capability_minor = p.minor;
  props->multiprocessor_count = p.multiProcessorCount;
  status = cudaDeviceGetPCIBusId(props->pci_bus_id, int(sizeof props->pci_bus_id), ordinal);
  if (status != cudaSuccess) {
    describe(status, what, sizeof what);
    return fail(error, error_size, "cuda:%d: cudaDeviceGetPCIBusId: %s", ordinal, what);
  }
  DeviceGuard guard(ordinal);  // cudaMemGetInfo measures the current device
  if (guard.status() != cudaSuccess) {
    describe(guard.status(), what, sizeof what);
    return fail(error, error_size, "cuda:%d: cudaSetDevice: %s", ordinal, what);
  }
  size_t free_bytes = 0, total_bytes = 0;
  status = cudaMemGetInfo(&free_bytes, &total_bytes);
  if (status != cudaSuccess) {
    cudaGetLastError();
    describe(status, what, sizeof what);
    return fail(error, error_size, "cuda:%d: cudaMemGetInfo: %s", ordinal, what);
  }
  props->free_memory = free_bytes;
  return 0;
}

int can_access_peer(int ordinal, int peer, int *can_access, char *error, size_t error_size) {
  *can_access = 0;
  int value = 0;
  const cudaError_t status = cudaDeviceCanAccessPeer(&value, ordinal, peer);
  if (status != cudaSuccess) {
    cudaGetLastError();
    char what[256];
    describe(status, what, sizeof what);
    return fail(error, error_size, "cudaDeviceCanAccessPeer(cuda:%d, cuda:%d): %s", ordinal, peer, what);
  }
  *can_access = value != 0;
  return 0;
}

void versions(dpt_backend_versions *out) {
  std::memset(out, 0, sizeof *out);
  if (cudaRuntimeGetVersion(&out->runtime_version) != cudaSuccess) out->runtime_version = 0;
  if (cudaDriverGetVersion(&out->driver_version) != cudaSuccess) out->driver_version = 0;
  char runtime[16], driver[16];
  format_cuda_version(out->runtime_version, runtime, sizeof runtime);
  format_cuda_version(out->driver_version, driver, sizeof driver);
  int blas[3] = {0, 0, 0};
  cublasGetProperty(MAJOR_VERSION, &blas[0]);
  cublasGetProperty(MINOR_VERSION, &blas[1]);
  cublasGetProperty(PATCH_LEVEL, &blas[2]);
  const size_t dnn = cudnnGetVersion();  // 9.x: major * 10000 + minor * 100 + patch
  int nccl = 0;
  if (ncclGetVersion(&nccl) != ncclSuccess) nccl = 0;  // 2.9 and later: major * 10000 + minor * 100 + patch
  std::snprintf(out->text, sizeof out->text,
                "CUDA runtime %s, driver %s, cuBLAS %d.%d.%d, cuDNN %zu.%zu.%zu, NCCL %d.%d.%d", runtime,
                driver, blas[0], blas[1], blas[2], dnn / 10000, (dnn % 10000) / 100, dnn % 100, nccl / 10000,
                (nccl % 10000) / 100, nccl % 100);
}

}  // namespace dpt::cuda
