// The platform layer: every OS call of the core (environment, clocks, memory, cores, files, dynamic
// libraries) lives here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dpt::platform {

std::optional<std::string> env(const char *name);
size_t core_count();
// CPUs this process may run on (its affinity mask), in order; empty when unknown.
std::vector<int> allowed_cpus();
// Binds the calling thread to one CPU; false when the OS refuses.
bool pin_current_thread(int cpu);
uint64_t host_memory_bytes();
double now_seconds();                                    // monotonic
void *aligned_allocate(size_t bytes, size_t alignment);  // nullptr on failure
void aligned_free(void *p);

// Processes.
uint64_t process_id();
// True only when no process pid exists (for the OS, from this process's view: kill(pid, 0) fails with
// ESRCH). A process that exists but may not be signalled, or a zombie, is not gone.
bool process_is_gone(uint64_t pid);

// Dynamic libraries, for loadable backends.
bool is_regular_file(const std::string &path);
bool is_directory(const std::string &path);  // follows a symbolic link
// The names of the regular files directly in directory (not following symbolic links, without "." files),
// sorted bytewise; nullopt when it cannot be listed.
std::optional<std::vector<std::string>> regular_files_in(const std::string &directory);
// Absolute directory of the shared library (or executable) whose code contains address; nullopt if unknown.
std::optional<std::string> directory_of_code(const void *address);
// Opens a library (symbols resolved now, kept local); nullptr with a one-line reason in error on failure.
void *library_open(const std::string &path, std::string &error);
void *library_symbol(void *library, const char *name);  // nullptr when absent
void library_close(void *library);

}  // namespace dpt::platform
