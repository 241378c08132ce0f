// Asks the CUDA backend module (loaded on this request) for its devices and their peer-access matrix.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/device.hpp"

namespace dpt {

// How a backend fared in a context: what dpt_backend_get_info reports.
struct BackendReport {
  bool requested = false;  // the context asked for devices of this kind
  bool loaded = false;     // the backend is present and its interface version is supported
  size_t device_count = 0;
  int32_t driver_version = 0, runtime_version = 0;
  std::string module_path;
  std::string reason;  // one line; why there are no (or fewer) devices; empty when all is well
  std::string versions;
};

struct CudaDiscovery {
  BackendReport report;
  std::vector<std::unique_ptr<Device>> devices;  // CudaDevice, in CUDA ordinal order
  std::vector<std::vector<bool>> peer_access;    // [i][j]: devices[i] can access devices[j]'s memory
};

// Never throws for a missing module, missing libraries, no driver or no GPU: those give zero devices and
// a reason. Throws only for host out-of-memory.
CudaDiscovery discover_cuda_devices();

}  // namespace dpt
