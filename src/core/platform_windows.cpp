// The platform layer on Windows (built with mingw-w64): see platform.hpp. Paths are UTF-8 in the core and
// UTF-16 for Windows (the W functions); files are opened in binary mode through the C runtime, whose
// descriptors and errno the callers share with POSIX.
#include <fcntl.h>
#include <io.h>
#include <sys/stat.h>
#include <windows.h>

#include <malloc.h>
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cwchar>
#include <memory>

#include "core/platform.hpp"

namespace dpt::platform {

namespace {

std::wstring widen(const std::string &text) {
  if (text.empty()) return std::wstring();
  const int n = MultiByteToWideChar(CP_UTF8, 0, text.data(), int(text.size()), nullptr, 0);
  std::wstring wide(size_t(n > 0 ? n : 0), L'\0');
  if (n > 0) MultiByteToWideChar(CP_UTF8, 0, text.data(), int(text.size()), wide.data(), n);
  return wide;
}

std::string narrow(const wchar_t *text, size_t length) {
  if (length == 0) return std::string();
  const int n = WideCharToMultiByte(CP_UTF8, 0, text, int(length), nullptr, 0, nullptr, nullptr);
  std::string utf8(size_t(n > 0 ? n : 0), '\0');
  if (n > 0) WideCharToMultiByte(CP_UTF8, 0, text, int(length), utf8.data(), n, nullptr, nullptr);
  return utf8;
}

// errno for the last Win32 error, so that callers report it as they report POSIX failures.
void set_errno_from_last_error() {
  switch (GetLastError()) {
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND:
      errno = ENOENT;
      break;
    case ERROR_ACCESS_DENIED:
    case ERROR_SHARING_VIOLATION:
    case ERROR_LOCK_VIOLATION:
      errno = EACCES;
      break;
    case ERROR_FILE_EXISTS:
    case ERROR_ALREADY_EXISTS:
      errno = EEXIST;
      break;
    case ERROR_DISK_FULL:
    case ERROR_HANDLE_DISK_FULL:
      errno = ENOSPC;
      break;
    case ERROR_NOT_SAME_DEVICE:
      errno = EXDEV;
      break;
    default:
      errno = EIO;
  }
}

FileKind kind_of(unsigned short mode) {
  if ((mode & _S_IFMT) == _S_IFREG) return FileKind::kRegular;
  if ((mode & _S_IFMT) == _S_IFDIR) return FileKind::kDirectory;
  if ((mode & _S_IFMT) == _S_IFCHR) return FileKind::kCharDevice;
  if ((mode & _S_IFMT) == _S_IFIFO) return FileKind::kFifo;
  return FileKind::kOther;
}

// The UTF-8 names of the entries of directory that keep(entry) accepts, unsorted; nullopt when it cannot
// be listed.
template <typename Keep>
std::optional<std::vector<std::string>> names_in(const std::string &directory, Keep keep) {
  WIN32_FIND_DATAW entry;
  HANDLE find = FindFirstFileW(widen(directory + "\\*").c_str(), &entry);
  if (find == INVALID_HANDLE_VALUE) return std::nullopt;
  const std::unique_ptr<void, BOOL(WINAPI *)(HANDLE)> closer(find, FindClose);  // also when a push throws
  std::vector<std::string> names;
  do {
    if (keep(entry)) names.push_back(narrow(entry.cFileName, std::wcslen(entry.cFileName)));
  } while (FindNextFileW(find, &entry));
  return names;
}

}  // namespace

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  DWORD_PTR process = 0, system = 0;
  if (!GetProcessAffinityMask(GetCurrentProcess(), &process, &system)) return cpus;
  for (int cpu = 0; cpu < int(sizeof(DWORD_PTR) * 8); ++cpu)
    if (process & (DWORD_PTR(1) << cpu)) cpus.push_back(cpu);
  return cpus;
}

bool pin_current_thread(int cpu) {
  if (cpu < 0 || cpu >= int(sizeof(DWORD_PTR) * 8)) return false;
  return SetThreadAffinityMask(GetCurrentThread(), DWORD_PTR(1) << cpu) != 0;
}

uint64_t host_memory_bytes() {
  MEMORYSTATUSEX status;
  status.dwLength = sizeof status;
  return GlobalMemoryStatusEx(&status) ? uint64_t(status.ullTotalPhys) : 0;
}

void *aligned_allocate(size_t bytes, size_t alignment) {
  return _aligned_malloc(bytes == 0 ? alignment : bytes, alignment);
}

void aligned_free(void *p) {
  _aligned_free(p);
}

uint64_t process_id() {
  return uint64_t(GetCurrentProcessId());
}

bool process_is_gone(uint64_t pid) {
  if (pid == 0 || pid > uint64_t(MAXDWORD)) return false;  // not a process id
  HANDLE process = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, DWORD(pid));
  if (process == nullptr) return GetLastError() == ERROR_INVALID_PARAMETER;  // no such process
  DWORD code = 0;
  const bool exited = GetExitCodeProcess(process, &code) && code != STILL_ACTIVE;
  CloseHandle(process);
  return exited;
}

FileKind file_kind(const std::string &path) {
  struct _stat64 st;
  return _wstat64(widen(path).c_str(), &st) == 0 ? kind_of(st.st_mode) : FileKind::kMissing;
}

int open_for_reading(const std::string &path, FileKind &kind, uint64_t &size) {
  const int fd = _wopen(widen(path).c_str(), _O_RDONLY | _O_BINARY | _O_NOINHERIT);
  if (fd < 0) return -1;
  struct _stat64 st;
  if (_fstat64(fd, &st) != 0) {
    const int error = errno;
    _close(fd);
    errno = error;
    return -1;
  }
  kind = kind_of(st.st_mode);
  size = uint64_t(st.st_size);
  return fd;
}

int create_new_file(const std::string &path) {
  return _wopen(widen(path).c_str(), _O_WRONLY | _O_CREAT | _O_EXCL | _O_BINARY | _O_NOINHERIT,
                _S_IREAD | _S_IWRITE);
}

int64_t read_some(int fd, void *destination, size_t n) {
  return _read(fd, destination, unsigned(std::min<size_t>(n, size_t(1) << 30)));
}

int64_t write_some(int fd, const void *source, size_t n) {
  return _write(fd, source, unsigned(std::min<size_t>(n, size_t(1) << 30)));
}

bool flush_to_disk(int fd) {
  return _commit(fd) == 0;  // FlushFileBuffers on the descriptor's handle
}

void close_file(int fd) {
  _close(fd);
}

bool replace_file(const std::string &from, const std::string &to) {
  if (MoveFileExW(widen(from).c_str(), widen(to).c_str(), MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH))
    return true;
  set_errno_from_last_error();
  return false;
}

bool sync_directory(const std::string &) {
  return true;
}

bool remove_file(const std::string &path) {
  return _wunlink(widen(path).c_str()) == 0;
}

std::optional<std::vector<std::string>> directory_entries(const std::string &directory) {
  return names_in(directory, [](const WIN32_FIND_DATAW &entry) {
    return std::wcscmp(entry.cFileName, L".") != 0 && std::wcscmp(entry.cFileName, L"..") != 0;
  });
}

std::optional<std::vector<std::string>> regular_files_in(const std::string &directory) {
  auto names = names_in(directory, [](const WIN32_FIND_DATAW &entry) {
    // Not directories, and not symbolic links (reparse points), as lstat does on POSIX.
    const DWORD skip = FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_REPARSE_POINT | FILE_ATTRIBUTE_DEVICE;
    return entry.cFileName[0] != L'.' && (entry.dwFileAttributes & skip) == 0;
  });
  if (names) std::sort(names->begin(), names->end());
  return names;
}

std::optional<std::string> directory_of_code(const void *address) {
  HMODULE module = nullptr;
  if (!GetModuleHandleExW(
          GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
          static_cast<LPCWSTR>(address), &module))
    return std::nullopt;
  std::wstring path(MAX_PATH, L'\0');
  for (;;) {
    const DWORD n = GetModuleFileNameW(module, path.data(), DWORD(path.size()));
    if (n == 0) return std::nullopt;
    if (n < path.size()) {
      path.resize(n);
      break;
    }
    path.resize(path.size() * 2);  // truncated: try a larger buffer
  }
  const size_t slash = path.find_last_of(L"\\/");
  if (slash == std::wstring::npos) return std::nullopt;
  return narrow(path.data(), slash);
}

void *library_open(const std::string &path, std::string &error) {
  // LOAD_WITH_ALTERED_SEARCH_PATH: the module's own dependencies are looked for in its directory first.
  HMODULE library = LoadLibraryExW(widen(path).c_str(), nullptr, LOAD_WITH_ALTERED_SEARCH_PATH);
  if (library == nullptr) {
    const DWORD code = GetLastError();
    char *text = nullptr;
    FormatMessageA(
        FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, nullptr,
        code, 0, reinterpret_cast<char *>(&text), 0, nullptr);
    std::string reason = text != nullptr ? text : "LoadLibrary failed";
    if (text != nullptr) LocalFree(text);
    while (!reason.empty() && (reason.back() == '\n' || reason.back() == '\r' || reason.back() == ' '))
      reason.pop_back();
    error = path + ": " + reason + " (error " + std::to_string(code) + ")";
  }
  return library;
}

void *library_symbol(void *library, const char *name) {
  return library != nullptr ? reinterpret_cast<void *>(GetProcAddress(static_cast<HMODULE>(library), name))
                            : nullptr;
}

void library_close(void *library) {
  if (library != nullptr) FreeLibrary(static_cast<HMODULE>(library));
}

}  // namespace dpt::platform
