// A fuzz input as a real file in memory (memfd), reachable through /proc/self/fd, so that the loaders
// read it as they read a user's file.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

struct MemFile {
  int fd;
  explicit MemFile(const uint8_t *data, size_t size) : fd(memfd_create("fuzz", 0)) {
    size_t done = 0;
    while (fd >= 0 && done < size) {
      ssize_t n = write(fd, data + done, size - done);
      if (n <= 0) break;
      done += size_t(n);
    }
  }
  ~MemFile() {
    if (fd >= 0) close(fd);
  }
  MemFile(const MemFile &) = delete;
  MemFile &operator=(const MemFile &) = delete;
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd); }
};
