// Simulated device memory. Each device owns a sparse memfd of DPTRAIN_SIM_CUDA_MEMORY bytes mapped twice:
// a PROT_NONE view whose addresses mem_alloc hands out (so the core crashes if it dereferences a device
// pointer on the host) and a read-write view the simulator computes in (the same offset in both). A
// first-fit allocator with a coalescing free list, 256-byte aligned, hands out ranges of the region.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>

#include "sim.hpp"

namespace dpt_sim {

namespace {

constexpr size_t kAlignment = 256;                 // cudaMalloc aligns to at least 256 bytes
constexpr size_t kPoisonLimit = size_t(64) << 20;  // new allocations up to this size are filled with 0xFF
constexpr unsigned char kPoison = 0xFF;            // every float of it a NaN

std::mutex registry_mutex;  // serializes the creation of devices
std::atomic<Device *> registry[kMaxDevices];
std::atomic<uint64_t> next_serial{1};

// Gives the whole pages inside [offset, offset + bytes) back to the system (they read as zeros).
void punch(Device &d, size_t offset, size_t bytes) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const size_t begin = (offset + page - 1) / page * page, end = (offset + bytes) / page * page;
  if (end > begin)
    fallocate(d.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off_t(begin), off_t(end - begin));
}

// Returns [offset, offset + bytes) to the free list, merged with its neighbours. Holds d.mutex.
void add_free(Device &d, size_t offset, size_t bytes) {
  auto next = d.free_blocks.lower_bound(offset);
  if (next != d.free_blocks.end() && offset + bytes == next->first) {
    bytes += next->second;
    next = d.free_blocks.erase(next);
  }
  if (next != d.free_blocks.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == offset) {
      previous->second += bytes;
      return;
    }
  }
  d.free_blocks.emplace(offset, bytes);
}

// Frees the allocation at it. Holds d.mutex.
void free_allocation(Device &d, std::map<size_t, Allocation>::iterator it) {
  const Allocation a = it->second;
  d.allocations.erase(it);
  d.reserved -= a.reserved;
  auto *owner = const_cast<dpt_backend_context *>(a.owner);
  if (owner != nullptr) owner->bytes_in_use -= a.bytes;
  punch(d, a.offset, a.reserved);
  add_free(d, a.offset, a.reserved);
}

int make_region(Device &d, const char *call, const Error &e) {
  char name[32];
  std::snprintf(name, sizeof name, "dptrain-sim-cuda:%d", d.ordinal);
  d.fd = memfd_create(name, MFD_CLOEXEC);
  if (d.fd < 0)
    return report(e, DPT_BACKEND_ERROR, "cuda:%d: %s: memfd_create: %s", d.ordinal, call,
                  std::strerror(errno));
  if (ftruncate(d.fd, off_t(d.capacity)) != 0) {
    const int err = errno;
    close(d.fd);
    return report(e, DPT_BACKEND_ERROR, "cuda:%d: %s: ftruncate(%llu bytes): %s", d.ordinal, call,
                  (unsigned long long)d.capacity, std::strerror(err));
  }
  void *device_view = mmap(nullptr, d.capacity, PROT_NONE, MAP_SHARED | MAP_NORESERVE, d.fd, 0);
  void *host_view = device_view == MAP_FAILED ? MAP_FAILED
                                              : mmap(nullptr, d.capacity, PROT_READ | PROT_WRITE,
                                                     MAP_SHARED | MAP_NORESERVE, d.fd, 0);
  if (host_view == MAP_FAILED) {
    const int err = errno;
    if (device_view != MAP_FAILED) munmap(device_view, d.capacity);
    close(d.fd);
    return report(e, err == ENOMEM ? DPT_BACKEND_ERROR_OUT_OF_MEMORY : DPT_BACKEND_ERROR,
                  "cuda:%d: %s: mmap of the %llu-byte device region: %s", d.ordinal, call,
                  (unsigned long long)d.capacity, std::strerror(err));
  }
  d.device_base = static_cast<char *>(device_view);
  d.host_base = static_cast<char *>(host_view);
  d.free_blocks.emplace(0, size_t(d.capacity));
  return 0;
}

}  // namespace

Device *get_device(int ordinal, const char *call, const Error &e) {
  if (ordinal < 0 || ordinal >= kMaxDevices) {
    report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: no such device", ordinal, call);
    return nullptr;
  }
  if (Device *d = registry[ordinal].load(std::memory_order_acquire)) return d;
  std::lock_guard<std::mutex> lock(registry_mutex);
  if (Device *d = registry[ordinal].load(std::memory_order_acquire)) return d;
  auto d = std::make_unique<Device>();
  d->ordinal = ordinal;
  d->capacity = config().capacity;
  if (make_region(*d, call, e) != 0) return nullptr;
  registry[ordinal].store(d.get(), std::memory_order_release);
  return d.release();  // lives as long as the process: the module is never unloaded
}

Device *device_of(const void *p) {
  for (int i = 0; i < kMaxDevices; ++i) {
    Device *d = registry[i].load(std::memory_order_acquire);
    if (d != nullptr && d->contains(p)) return d;
  }
  return nullptr;
}

bool is_device_pointer(const void *p) {
  return device_of(p) != nullptr;
}

uint64_t reserved_bytes(int ordinal) {
  if (ordinal < 0 || ordinal >= kMaxDevices) return 0;
  Device *d = registry[ordinal].load(std::memory_order_acquire);
  if (d == nullptr) return 0;
  std::lock_guard<std::mutex> lock(d->mutex);
  return d->reserved;
}

int allocate(Device &d, size_t bytes, const dpt_backend_context *owner, void **out, const Error &e) {
  const auto out_of_memory = [&] {
    return report(e, DPT_BACKEND_ERROR_OUT_OF_MEMORY,
                  "cuda:%d: cudaMalloc(%zu bytes): error 2, cudaErrorMemoryAllocation: out of memory",
                  d.ordinal, bytes);
  };
  if (bytes > d.capacity) return out_of_memory();
  const size_t reserve = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  size_t offset = 0;
  {
    std::lock_guard<std::mutex> lock(d.mutex);
    auto block = d.free_blocks.begin();
    while (block != d.free_blocks.end() && block->second < reserve) ++block;
    if (block == d.free_blocks.end()) return out_of_memory();
    offset = block->first;
    const size_t left = block->second - reserve;
    d.free_blocks.erase(block);
    if (left > 0) d.free_blocks.emplace(offset + reserve, left);
    Allocation a;
    a.offset = offset;
    a.bytes = bytes;
    a.reserved = reserve;
    a.serial = next_serial.fetch_add(1);
    a.owner = owner;
    d.allocations.emplace(offset, a);
    d.reserved += reserve;
    const_cast<dpt_backend_context *>(owner)->bytes_in_use += bytes;
  }
  // Fresh device memory holds garbage on a GPU; here NaNs, so that reading it before writing shows.
  if (bytes <= kPoisonLimit) std::memset(d.host_base + offset, kPoison, bytes);
  *out = d.device_base + offset;
  return 0;
}

bool release(Device &d, void *p, const dpt_backend_context *owner, size_t &bytes) {
  if (!d.contains(p)) return false;
  const size_t offset = size_t(static_cast<char *>(p) - d.device_base);
  std::lock_guard<std::mutex> lock(d.mutex);
  const auto it = d.allocations.find(offset);
  if (it == d.allocations.end() || it->second.owner != owner) return false;
  bytes = it->second.bytes;
  free_allocation(d, it);
  return true;
}

bool owned_by(Device &d, const void *p, const dpt_backend_context *owner) {
  if (!d.contains(p)) return false;
  const size_t offset = size_t(static_cast<const char *>(p) - d.device_base);
  std::lock_guard<std::mutex> lock(d.mutex);
  const auto it = d.allocations.find(offset);
  return it != d.allocations.end() && it->second.owner == owner;
}

void release_all(Device &d, const dpt_backend_context *owner) {
  std::lock_guard<std::mutex> lock(d.mutex);
  for (auto it = d.allocations.begin(); it != d.allocations.end();) {
    auto next = std::next(it);
    if (it->second.owner == owner) free_allocation(d, it);
    it = next;
  }
}

bool checked_bytes(size_t count, size_t size, size_t &bytes) {
  return !__builtin_mul_overflow(count, size, &bytes);
}

int resolve(const dpt_backend_context &c, const char *call, const char *name, const void *p, size_t bytes,
            size_t alignment, Where where, bool optional, Span &out, const Error &e) {
  out = Span{};
  const int ordinal = c.ordinal;
  if (p == nullptr) {
    if (optional) return 0;
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: NULL pointer (%s)", ordinal, call,
                  name);
  }
  Device *d = device_of(p);
  if (d == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "cuda:%d: %s: %s %p is not device memory (a host pointer, or not from mem_alloc)", ordinal,
                  call, name, p);
  if (where == Where::kContextDevice && d != c.device)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "cuda:%d: %s: %s %p is memory of cuda:%d, not of the context's device", ordinal, call, name,
                  p, d->ordinal);
  if (alignment > 1 && reinterpret_cast<uintptr_t>(p) % alignment != 0)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: %s %p is not aligned to %zu bytes",
                  ordinal, call, name, p, alignment);
  const size_t offset = size_t(static_cast<const char *>(p) - d->device_base);
  std::lock_guard<std::mutex> lock(d->mutex);
  auto it = d->allocations.upper_bound(offset);
  if (it == d->allocations.begin() || offset >= std::prev(it)->second.offset + std::prev(it)->second.bytes)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "cuda:%d: %s: %s %p is not in a live allocation of cuda:%d (freed, or never allocated)",
                  ordinal, call, name, p, d->ordinal);
  const Allocation &a = std::prev(it)->second;
  if (bytes > a.offset + a.bytes - offset)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "cuda:%d: %s: %s [%p, +%zu bytes) runs past the end of its allocation (%zu bytes at %p)",
                  ordinal, call, name, p, bytes, a.bytes, static_cast<void *>(d->device_base + a.offset));
  out.device = d;
  out.name = name;
  out.address = p;
  out.host = d->host_base + offset;
  out.bytes = bytes;
  out.serial = a.serial;
  return 0;
}

bool product(std::initializer_list<size_t> factors, size_t &out) {
  size_t p = 1;
  for (const size_t f : factors)
    if (__builtin_mul_overflow(p, f, &p)) return false;
  out = p;
  return true;
}

int floats(const dpt_backend_context &c, const char *call, const char *name, const void *p, size_t count,
           bool optional, Span &out, const Error &e) {
  size_t bytes = 0;
  if (!checked_bytes(count, sizeof(float), bytes))
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: %s of %zu floats is too large",
                  c.ordinal, call, name, count);
  return resolve(c, call, name, p, bytes, alignof(float), Where::kContextDevice, optional, out, e);
}

bool still_allocated(const Span &s) {
  if (!s) return true;
  Device &d = *s.device;
  const size_t offset = size_t(s.host - d.host_base);
  std::lock_guard<std::mutex> lock(d.mutex);
  auto it = d.allocations.upper_bound(offset);
  return it != d.allocations.begin() && std::prev(it)->second.serial == s.serial;
}

}  // namespace dpt_sim
