// The platform layer: every OS call of the core (environment, clocks, memory, cores) lives here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace dpt::platform {

std::optional<std::string> env(const char *name);
size_t core_count();
uint64_t host_memory_bytes();
double now_seconds();                                    // monotonic
void *aligned_allocate(size_t bytes, size_t alignment);  // nullptr on failure
void aligned_free(void *p);

}  // namespace dpt::platform
