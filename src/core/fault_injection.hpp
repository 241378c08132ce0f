// Test seams for faults that cannot be provoked from outside: the n-th allocation fails. Process-wide,
// off unless a test arms it; the cost when off is one relaxed atomic load per device allocation.
#pragma once

#include <cstdint>

namespace dpt::fault_injection {

// From now on, allocation number n (1-based, counting device-arena allocations and, in test binaries that
// route operator new through allocation_should_fail(), heap allocations) fails. n = 0 disarms.
void fail_allocation_at(uint64_t n);
// Counts one allocation; true when it is the one to fail.
bool allocation_should_fail();
// Allocations counted since the last fail_allocation_at().
uint64_t allocations_counted();

}  // namespace dpt::fault_injection
