#include "backend/cuda/device.hpp"

#include "backend/cuda/kernels.hpp"
#include "core/error.hpp"

namespace dpt {

CudaDevice::CudaDevice(const dpt_backend_v2 &api, int ordinal, const dpt_backend_device_props &props)
    : api_(api),
      ordinal_(ordinal),
      name_("cuda:" + std::to_string(ordinal)),
      props_(props),
      arena_(name_, 0) {}

void CudaDevice::submit(std::function<void()> task, size_t lane) {
  WorkerThread *worker = nullptr;
  {
    std::lock_guard<std::mutex> lock(lanes_mutex_);
    while (lanes_.size() <= lane) lanes_.push_back(std::make_unique<WorkerThread>());
    worker = lanes_[lane].get();
  }
  worker->submit(std::move(task));
}

std::unique_ptr<DeviceKernels> CudaDevice::create_kernels(const KernelOptions &options) {
  return std::make_unique<CudaKernels>(api_, ordinal_, options);
}

DeviceDetails CudaDevice::details() {
  DeviceDetails d;
  d.free_memory = props_.free_memory;
  dpt_backend_device_props now;
  char error[256];
  if (api_.device_props(ordinal_, &now, error, sizeof error) == 0) d.free_memory = now.free_memory;
  d.compute_capability_major = props_.compute_capability_major;
  d.compute_capability_minor = props_.compute_capability_minor;
  d.multiprocessor_count = props_.multiprocessor_count;
  d.pci_bus_id = props_.pci_bus_id;
  d.product_name = props_.name;
  return d;
}

}  // namespace dpt
