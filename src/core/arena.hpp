// Device memory: the allocator interface every device's buffers come from, the CPU devices' arena (every
// buffer charged against an optional cap, so that a CPU device runs out of memory like a GPU does and
// says which device it was), and the buffer type the replicas hold.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace dpt {

// Where a device's buffers live. The core never reads or writes a buffer's contents through its pointer
// unless the memory is host memory (a CPU device): it goes through the device's kernels (device_kernels.hpp).
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // Throws DPT_ERROR_OUT_OF_MEMORY naming the device.
  virtual void *allocate(size_t bytes) = 0;
  virtual void release(void *p, size_t bytes) = 0;
  // Sets bytes at p to zero (a GPU: queued on the stream).
  virtual void zero(void *p, size_t bytes) = 0;
};

class MemoryArena final : public DeviceMemory {
 public:
  MemoryArena(std::string device_name, uint64_t limit) : name_(std::move(device_name)), limit_(limit) {}
  MemoryArena(const MemoryArena &) = delete;
  MemoryArena &operator=(const MemoryArena &) = delete;

  // 64-byte aligned; throws DPT_ERROR_OUT_OF_MEMORY naming the device.
  void *allocate(size_t bytes) override;
  void release(void *p, size_t bytes) override;
  void zero(void *p, size_t bytes) override;

  uint64_t limit() const { return limit_; }
  uint64_t in_use() const { return in_use_.load(); }
  const std::string &name() const { return name_; }

 private:
  std::string name_;
  uint64_t limit_;  // 0 = unlimited
  std::atomic<uint64_t> in_use_{0};
};

// A float buffer of a device's memory. Move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceMemory &memory, size_t count);
  DeviceBuffer(DeviceBuffer &&other) noexcept { swap(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept {
    DeviceBuffer tmp(std::move(other));
    swap(tmp);
    return *this;
  }
  ~DeviceBuffer();

  float *data() { return data_; }
  const float *data() const { return data_; }
  size_t size() const { return size_; }
  void zero();

 private:
  void swap(DeviceBuffer &o) noexcept {
    std::swap(memory_, o.memory_);
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
  }
  DeviceMemory *memory_ = nullptr;
  float *data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace dpt
