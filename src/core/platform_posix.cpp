// The platform layer on Linux (POSIX): see platform.hpp.
#include "core/platform.hpp"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

namespace dpt::platform {

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

bool pin_current_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

uint64_t host_memory_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
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

uint64_t process_id() {
  return uint64_t(::getpid());
}

bool process_is_gone(uint64_t pid) {
  if (pid == 0 || pid > uint64_t(std::numeric_limits<pid_t>::max())) return false;  // not a process id
  return ::kill(pid_t(pid), 0) != 0 && errno == ESRCH;
}

namespace {

FileKind kind_of(mode_t mode) {
  if (S_ISREG(mode)) return FileKind::kRegular;
  if (S_ISDIR(mode)) return FileKind::kDirectory;
  if (S_ISFIFO(mode)) return FileKind::kFifo;
  if (S_ISCHR(mode)) return FileKind::kCharDevice;
  if (S_ISBLK(mode)) return FileKind::kBlockDevice;
  if (S_ISSOCK(mode)) return FileKind::kSocket;
  return FileKind::kOther;
}

// The names of the entries of directory that keep(name) accepts, unsorted; nullopt when it cannot be
// listed. The directory is closed also when an allocation fails on the way.
template <typename Keep>
std::optional<std::vector<std::string>> names_in(const std::string &directory, Keep keep) {
  const std::unique_ptr<DIR, int (*)(DIR *)> dir(::opendir(directory.c_str()), ::closedir);
  if (!dir) return std::nullopt;
  std::vector<std::string> names;
  while (const dirent *e = ::readdir(dir.get()))
    if (keep(e->d_name)) names.emplace_back(e->d_name);
  return names;
}

}  // namespace

FileKind file_kind(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? kind_of(st.st_mode) : FileKind::kMissing;
}

int open_for_reading(const std::string &path, FileKind &kind, uint64_t &size) {
  // Non-blocking, so that a FIFO without a writer cannot block the open; blocking again once it is known
  // to be a regular file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  int flags = 0;
  if (::fstat(fd, &st) != 0 || (flags = ::fcntl(fd, F_GETFL)) < 0 ||
      ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int error = errno;
    ::close(fd);
    errno = error;
    return -1;
  }
  kind = kind_of(st.st_mode);
  size = uint64_t(st.st_size);
  return fd;
}

int create_new_file(const std::string &path) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
}

int64_t read_some(int fd, void *destination, size_t n) {
  return int64_t(::read(fd, destination, n));
}

int64_t write_some(int fd, const void *source, size_t n) {
  return int64_t(::write(fd, source, n));
}

bool flush_to_disk(int fd) {
  return ::fsync(fd) == 0;
}

void close_file(int fd) {
  ::close(fd);
}

bool replace_file(const std::string &from, const std::string &to) {
  return ::rename(from.c_str(), to.c_str()) == 0;
}

bool sync_directory(const std::string &directory) {
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::fsync(fd) == 0;
  const int error = errno;
  ::close(fd);
  errno = error;
  return ok;
}

bool remove_file(const std::string &path) {
  return ::unlink(path.c_str()) == 0;
}

std::optional<std::vector<std::string>> directory_entries(const std::string &directory) {
  return names_in(directory, [](const char *name) {
    return std::strcmp(name, ".") != 0 && std::strcmp(name, "..") != 0;
  });
}

std::optional<std::vector<std::string>> regular_files_in(const std::string &directory) {
  auto names = names_in(directory, [&](const char *name) {
    struct stat st;
    return name[0] != '.' && ::lstat((directory + "/" + name).c_str(), &st) == 0 && S_ISREG(st.st_mode);
  });
  if (names) std::sort(names->begin(), names->end());
  return names;
}

std::optional<std::string> directory_of_code(const void *address) {
  Dl_info info;
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr || info.dli_fname[0] == '\0')
    return std::nullopt;
  char resolved[PATH_MAX];
  if (realpath(info.dli_fname, resolved) == nullptr) return std::nullopt;
  std::string path(resolved);
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return std::nullopt;
  return slash == 0 ? std::string("/") : path.substr(0, slash);
}

void *library_open(const std::string &path, std::string &error) {
  dlerror();  // clear a stale message
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char *message = dlerror();
    error = message != nullptr ? message : "dlopen failed";
  }
  return library;
}

void *library_symbol(void *library, const char *name) {
  return library != nullptr ? dlsym(library, name) : nullptr;
}

void library_close(void *library) {
  if (library != nullptr) dlclose(library);
}

}  // namespace dpt::platform
