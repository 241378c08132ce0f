// A CPU device: one worker thread that runs submitted tasks in order, and one memory arena.
#pragma once

#include "backend/device.hpp"
#include "core/worker_thread.hpp"

namespace dpt {

class CpuDevice final : public Device {
 public:
  // pin_cpu: the CPU the worker thread is bound to, or -1 to leave it to the scheduler.
  CpuDevice(size_t ordinal, uint64_t memory_limit, int pin_cpu = -1);

  dpt_device_kind kind() const override { return DPT_DEVICE_CPU; }
  size_t ordinal() const override { return ordinal_; }
  const std::string &name() const override { return name_; }
  uint64_t total_memory() const override;
  MemoryArena &arena() override { return arena_; }
  // One lane: a trainer never puts two replicas on one CPU device.
  void submit(std::function<void()> task, size_t /*lane*/) override { worker_.submit(std::move(task)); }
  std::unique_ptr<DeviceKernels> create_kernels(const KernelOptions &options) override;

 private:
  size_t ordinal_;
  std::string name_;
  MemoryArena arena_;
  WorkerThread worker_;  // last: joined before the arena goes
};

}  // namespace dpt
