// A CUDA GPU as the core sees it: discovered through the loaded backend module (backend_interface.h).
// Its worker threads queue the replicas' work on their streams (CudaKernels, one context per replica, so
// that several replicas, "virtual devices", can share the GPU): one worker per replica a trainer puts on
// it (created on first use), so that those replicas can wait for each other inside a pass.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "backend/device.hpp"
#include "core/worker_thread.hpp"
#include "interface/backend_interface.h"

namespace dpt {

class CudaDevice final : public Device {
 public:
  CudaDevice(const dpt_backend_v2 &api, int ordinal, const dpt_backend_device_props &props);

  dpt_device_kind kind() const override { return DPT_DEVICE_CUDA; }
  size_t ordinal() const override { return size_t(ordinal_); }
  const std::string &name() const override { return name_; }
  uint64_t total_memory() const override { return props_.total_memory; }
  // Host-side bookkeeping only: a GPU's buffers come from its kernels (create_kernels).
  MemoryArena &arena() override { return arena_; }
  void submit(std::function<void()> task, size_t lane) override;
  std::unique_ptr<DeviceKernels> create_kernels(const KernelOptions &options) override;
  DeviceDetails details() override;
  const dpt_backend_v2 &api() const { return api_; }

 private:
  const dpt_backend_v2 &api_;
  int ordinal_;
  std::string name_;
  dpt_backend_device_props props_;  // as discovered; details() measures free memory again
  MemoryArena arena_;
  std::mutex lanes_mutex_;
  std::vector<std::unique_ptr<WorkerThread>> lanes_;  // last: joined first
};

}  // namespace dpt
