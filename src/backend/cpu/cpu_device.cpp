#include "backend/cpu/cpu_device.hpp"

#include "backend/cpu/blas.hpp"
#include "core/platform.hpp"

namespace dpt {

CpuDevice::CpuDevice(size_t ordinal, uint64_t memory_limit, int pin_cpu)
    : ordinal_(ordinal), name_("cpu:" + std::to_string(ordinal)), arena_(name_, memory_limit) {
  blas::use_single_thread();  // each device runs its own GEMMs; devices run in parallel
  worker_ = std::thread([this, pin_cpu] {
    if (pin_cpu >= 0) platform::pin_current_thread(pin_cpu);  // a refusal only costs speed
    run();
  });
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
    if (queued_ == slots_.size()) {  // full: unroll the ring into a buffer twice the size
      std::vector<std::function<void()>> bigger(2 * slots_.size());
      for (size_t i = 0; i < queued_; ++i) bigger[i] = std::move(slots_[(head_ + i) % slots_.size()]);
      slots_ = std::move(bigger);
      head_ = 0;
    }
    slots_[(head_ + queued_) % slots_.size()] = std::move(task);
    ++queued_;
  }
  wake_.notify_one();
}

void CpuDevice::run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || queued_ != 0; });
      if (queued_ == 0) return;  // stopping, and nothing left to do
      task = std::move(slots_[head_]);
      head_ = (head_ + 1) % slots_.size();
      --queued_;
    }
    task();  // tasks catch their own exceptions (see parallel_for_devices)
  }
}

}  // namespace dpt
