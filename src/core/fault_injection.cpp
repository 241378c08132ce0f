#include "core/fault_injection.hpp"

#include <atomic>

namespace dpt::fault_injection {

namespace {
std::atomic<uint64_t> fail_at{0};
std::atomic<uint64_t> counted{0};
}  // namespace

void fail_allocation_at(uint64_t n) {
  counted.store(0);
  fail_at.store(n);
}

bool allocation_should_fail() {
  const uint64_t target = fail_at.load(std::memory_order_relaxed);
  if (target == 0) return false;
  return counted.fetch_add(1) + 1 == target;
}

uint64_t allocations_counted() {
  return counted.load();
}

}  // namespace dpt::fault_injection
