// The devices of a process that dptrain may use. Trainers borrow them by index.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "backend/cuda/discovery.hpp"
#include "backend/device.hpp"

namespace dpt {

struct ContextConfig {
  size_t cpu_devices = 0;  // 0 = DPTRAIN_CPU_DEVICES or the core count
  uint64_t cpu_memory_limit = 0;
  bool want_cpu = true;    // discover CPU devices
  bool want_cuda = false;  // load the CUDA module and discover its devices (after the CPU devices)
};

class Context {
 public:
  explicit Context(const ContextConfig &config);

  size_t device_count() const { return devices_.size(); }
  Device &device(size_t index) const { return *devices_.at(index); }

  // How the backend of devices of this kind fared (requested, loaded, device count, reason).
  const BackendReport &backend_report(dpt_device_kind kind) const;
  // Whether device index can access device peer's memory directly: both CUDA devices with peer access.
  bool can_access_peer(size_t index, size_t peer) const;

  // Held by a trainer for the whole of each multi-device operation, so that the tasks of two trainers
  // sharing devices can never interleave differently on two devices (which would deadlock collectives).
  std::mutex &work_mutex() { return work_mutex_; }

 private:
  std::vector<std::unique_ptr<Device>> devices_;
  BackendReport cpu_report_, cuda_report_;
  size_t first_cuda_ = 0;                            // index of the first CUDA device
  std::vector<std::vector<bool>> cuda_peer_access_;  // among the CUDA devices, in their order
  std::mutex work_mutex_;
};

// Resolves the CPU device count: explicit value, else DPTRAIN_CPU_DEVICES, else the core count.
size_t resolve_cpu_device_count(size_t requested);

}  // namespace dpt
