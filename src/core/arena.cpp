#include "core/arena.hpp"

#include <cstring>

#include "core/error.hpp"
#include "core/fault_injection.hpp"
#include "core/platform.hpp"

namespace dpt {

void *MemoryArena::allocate(size_t bytes) {
  uint64_t before = in_use_.fetch_add(bytes);
  if (limit_ != 0 && before + bytes > limit_) {
    in_use_.fetch_sub(bytes);
    throw_error(DPT_ERROR_OUT_OF_MEMORY, "device " + name_ + " out of memory: " + std::to_string(bytes) +
                                             " bytes requested, " + std::to_string(before) + " of " +
                                             std::to_string(limit_) + " in use");
  }
  void *p = fault_injection::allocation_should_fail() ? nullptr : platform::aligned_allocate(bytes, 64);
  if (p == nullptr) {
    in_use_.fetch_sub(bytes);
    throw_error(DPT_ERROR_OUT_OF_MEMORY,
                "device " + name_ + ": host allocation of " + std::to_string(bytes) + " bytes failed");
  }
  return p;
}

void MemoryArena::release(void *p, size_t bytes) {
  if (p == nullptr) return;
  platform::aligned_free(p);
  in_use_.fetch_sub(bytes);
}

void MemoryArena::zero(void *p, size_t bytes) {
  if (bytes != 0) std::memset(p, 0, bytes);
}

DeviceBuffer::DeviceBuffer(DeviceMemory &memory, size_t count) : memory_(&memory), size_(count) {
  if (count > SIZE_MAX / sizeof(float)) throw_error(DPT_ERROR_OUT_OF_MEMORY, "buffer size overflows");
  data_ = static_cast<float *>(memory.allocate(count * sizeof(float)));
}

DeviceBuffer::~DeviceBuffer() {
  if (memory_ != nullptr) memory_->release(data_, size_ * sizeof(float));
}

void DeviceBuffer::zero() {
  if (size_ != 0) memory_->zero(data_, size_ * sizeof(float));
}

}  // namespace dpt
