// The platform layer: every OS call of the core (environment, clocks, memory, cores, files, dynamic
// libraries) lives here, implemented once per OS: platform_posix.cpp (Linux) and platform_windows.cpp
// (Windows, built with mingw-w64); platform.cpp has what standard C++ answers alike on both. Paths are UTF-8
// on both.
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

// Separates the directories of a path list (DPTRAIN_BACKEND_PATH): ':' on POSIX, ';' on Windows (as PATH).
// The characters that end a directory in a path: '/' on POSIX, '/' and '\\' on Windows.
#if defined(_WIN32)
constexpr char kPathListSeparator = ';';
constexpr const char *kDirectorySeparators = "/\\";
#else
constexpr char kPathListSeparator = ':';
constexpr const char *kDirectorySeparators = "/";
#endif

// Files, for core/file_io (their only user, which adds fault injection and the error messages). On failure
// each returns false (or -1) with errno set to an errno value, which strerror() describes.
enum class FileKind { kMissing, kRegular, kDirectory, kFifo, kCharDevice, kBlockDevice, kSocket, kOther };
// What path is (following symbolic links); kMissing with errno set when it cannot be examined.
FileKind file_kind(const std::string &path);
// Opens a file for binary reading without blocking on a FIFO or a device; kind and size are those of the
// opened file (fstat), and reads block as usual afterwards. -1 with errno on failure.
int open_for_reading(const std::string &path, FileKind &kind, uint64_t &size);
// Creates path for binary writing, failing with EEXIST when it exists (O_EXCL). -1 with errno on failure.
int create_new_file(const std::string &path);
// One read() or write() call: the bytes moved, or -1 with errno (EINTR included: callers retry).
int64_t read_some(int fd, void *destination, size_t n);
int64_t write_some(int fd, const void *source, size_t n);
// Flushes the file's data to the disk (fsync; FlushFileBuffers on Windows).
bool flush_to_disk(int fd);
void close_file(int fd);
// Renames from over to, replacing to if it exists, atomically (rename; MoveFileExW with
// MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH on Windows, whose plain rename refuses an existing
// target).
bool replace_file(const std::string &from, const std::string &to);
// Makes a rename in directory durable (fsync of the directory; on Windows the write-through rename already
// is, and a directory cannot be opened for flushing: true).
bool sync_directory(const std::string &directory);
bool remove_file(const std::string &path);
// Every name in directory but "." and "..", unsorted; nullopt when it cannot be listed.
std::optional<std::vector<std::string>> directory_entries(const std::string &directory);

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
