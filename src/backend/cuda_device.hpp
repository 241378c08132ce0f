// A CUDA GPU as the core sees it: discovered through the loaded backend module (backend_interface.h).
// Discovery only in this version: it describes itself, but runs no work (submit throws UNSUPPORTED).
#pragma once

#include "backend/backend_interface.h"
#include "backend/device.hpp"

namespace dpt {

class CudaDevice final : public Device {
 public:
  CudaDevice(const dpt_backend_v1 &api, int ordinal, const dpt_backend_device_props &props);

  dpt_device_kind kind() const override { return DPT_DEVICE_CUDA; }
  size_t ordinal() const override { return size_t(ordinal_); }
  const std::string &name() const override { return name_; }
  uint64_t total_memory() const override { return props_.total_memory; }
  MemoryArena &arena() override { return arena_; }
  void submit(std::function<void()> task) override;
  DeviceDetails details() override;

 private:
  const dpt_backend_v1 &api_;
  int ordinal_;
  std::string name_;
  dpt_backend_device_props props_;  // as discovered; details() measures free memory again
  MemoryArena arena_;               // holds nothing yet: no buffer lives on a GPU in this version
};

}  // namespace dpt
