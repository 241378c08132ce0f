// A device's memory arena: every buffer a device holds is charged to it, against an optional cap,
// so that a CPU device runs out of memory like a GPU does and says which device it was.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace dpt {

class MemoryArena {
 public:
  MemoryArena(std::string device_name, uint64_t limit) : name_(std::move(device_name)), limit_(limit) {}
  MemoryArena(const MemoryArena &) = delete;
  MemoryArena &operator=(const MemoryArena &) = delete;

  // 64-byte aligned; throws DPT_ERROR_OUT_OF_MEMORY naming the device.
  void *allocate(size_t bytes);
  void release(void *p, size_t bytes);

  uint64_t limit() const { return limit_; }
  uint64_t in_use() const { return in_use_.load(); }
  const std::string &name() const { return name_; }

 private:
  std::string name_;
  uint64_t limit_;  // 0 = unlimited
  std::atomic<uint64_t> in_use_{0};
};

// A float buffer owned by an arena. Move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(MemoryArena &arena, size_t count);
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
    std::swap(arena_, o.arena_);
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
  }
  MemoryArena *arena_ = nullptr;
  float *data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace dpt
