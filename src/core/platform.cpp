// The platform layer's calls that standard C++, or another call of the layer, answers alike on every OS
// (platform.hpp); the others are in platform_posix.cpp and platform_windows.cpp.
#include "core/platform.hpp"

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

bool is_regular_file(const std::string &path) {
  return file_kind(path) == FileKind::kRegular;
}

bool is_directory(const std::string &path) {
  return file_kind(path) == FileKind::kDirectory;
}

double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

}  // namespace dpt::platform
