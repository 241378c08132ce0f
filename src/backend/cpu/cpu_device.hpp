// A CPU device: one worker thread that runs submitted tasks in order, and one memory arena.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "backend/device.hpp"

namespace dpt {

class CpuDevice final : public Device {
 public:
  // pin_cpu: the CPU the worker thread is bound to, or -1 to leave it to the scheduler.
  CpuDevice(size_t ordinal, uint64_t memory_limit, int pin_cpu = -1);
  ~CpuDevice() override;

  dpt_device_kind kind() const override { return DPT_DEVICE_CPU; }
  size_t ordinal() const override { return ordinal_; }
  const std::string &name() const override { return name_; }
  uint64_t total_memory() const override;
  MemoryArena &arena() override { return arena_; }
  void submit(std::function<void()> task) override;

 private:
  void run();

  size_t ordinal_;
  std::string name_;
  MemoryArena arena_;
  std::mutex mutex_;
  std::condition_variable wake_;
  // A ring of task slots: no heap allocation per task once it has grown to the peak queue length.
  std::vector<std::function<void()>> slots_ = std::vector<std::function<void()>>(16);
  size_t head_ = 0, queued_ = 0;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace dpt
