// A CPU device: one worker thread that runs submitted tasks in order, and one memory arena.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "backend/device.hpp"

namespace dpt {

class CpuDevice final : public Device {
 public:
  CpuDevice(size_t ordinal, uint64_t memory_limit);
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
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace dpt
