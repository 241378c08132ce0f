#include "core/platform.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace dpt::platform {

std::optional<std::string> env(const char *name) {
  const char *v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

size_t core_count() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

uint64_t host_memory_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

void *aligned_allocate(size_t bytes, size_t alignment) {
  // Large buffers (gradients, activations) get 2 MiB alignment and transparent huge pages where the
  // kernel offers them only on request (THP "madvise" mode): 4 KiB pages made streaming over a few MiB
  // TLB-bound and its timing erratic.
  constexpr size_t kHugePage = size_t(2) << 20;
  const bool huge = bytes >= kHugePage;
  void *p = nullptr;
  if (posix_memalign(&p, huge ? kHugePage : alignment, bytes == 0 ? alignment : bytes) != 0) return nullptr;
  if (huge) madvise(p, bytes, MADV_HUGEPAGE);  // advice only: failure changes nothing
  return p;
}

void aligned_free(void *p) {
  std::free(p);
}

}  // namespace dpt::platform
