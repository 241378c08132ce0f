#include "backend/cpu/cpu_device.hpp"

#include "backend/cpu/blas.hpp"
#include "core/platform.hpp"

namespace dpt {

CpuDevice::CpuDevice(size_t ordinal, uint64_t memory_limit)
    : ordinal_(ordinal), name_("cpu:" + std::to_string(ordinal)), arena_(name_, memory_limit) {
  blas::use_single_thread();  // each device runs its own GEMMs; devices run in parallel
  worker_ = std::thread([this] { run(); });
}

CpuDevice::~CpuDevice() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  worker_.join();
}

uint64_t CpuDevice::total_memory() const {
  return arena_.limit() != 0 ? arena_.limit() : platform::host_memory_bytes();
}

void CpuDevice::submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void CpuDevice::run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left to do
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();  // tasks catch their own exceptions (see parallel_for_devices)
  }
}

}  // namespace dpt
