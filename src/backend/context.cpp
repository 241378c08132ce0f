#include "backend/context.hpp"

#include <dptrain/device.h>

#include <cerrno>
#include <cstdlib>

#include "backend/cpu/cpu_device.hpp"
#include "core/error.hpp"
#include "core/platform.hpp"

namespace dpt {

size_t resolve_cpu_device_count(size_t requested) {
  size_t count = requested;
  if (count == 0) {
    if (auto text = platform::env("DPTRAIN_CPU_DEVICES")) {
      char *end = nullptr;
      errno = 0;
      long long v = std::strtoll(text->c_str(), &end, 10);
      DPT_REQUIRE(errno == 0 && end != text->c_str() && *end == '\0' && v > 0, DPT_ERROR_INVALID_ARGUMENT,
                  "DPTRAIN_CPU_DEVICES must be a positive integer, got '" + *text + "'");
      DPT_REQUIRE(v <= DPT_MAX_CPU_DEVICES, DPT_ERROR_OUT_OF_RANGE,
                  "DPTRAIN_CPU_DEVICES=" + *text + " exceeds " + std::to_string(DPT_MAX_CPU_DEVICES));
      count = size_t(v);
    } else {
      count = platform::core_count();
      if (count > DPT_MAX_CPU_DEVICES) count = DPT_MAX_CPU_DEVICES;
    }
  }
  DPT_REQUIRE(count <= DPT_MAX_CPU_DEVICES, DPT_ERROR_OUT_OF_RANGE,
              "cpu_devices " + std::to_string(count) + " exceeds " + std::to_string(DPT_MAX_CPU_DEVICES));
  return count;
}

Context::Context(const ContextConfig &config) {
  size_t cpus = resolve_cpu_device_count(config.cpu_devices);
  for (size_t i = 0; i < cpus; ++i)
    devices_.push_back(std::make_unique<CpuDevice>(i, config.cpu_memory_limit));
}

}  // namespace dpt
