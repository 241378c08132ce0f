#include "backend/context.hpp"

#include <dptrain/device.h>

#include <cerrno>
#include <cstdlib>

#include "backend/cpu/cpu_device.hpp"
#include "core/error.hpp"
#include "core/platform.hpp"

namespace dpt {

namespace {

// When a context has one CPU device for each CPU the process may use (the default), device i's worker is
// bound to the i-th of them, so that workers neither migrate nor meet on one core; DPTRAIN_PIN_THREADS=0
// turns this off. With fewer devices the scheduler places them (another context may use the other CPUs);
// with more, it shares the CPUs out better than a fixed binding would.
int pin_cpu(size_t device, size_t devices) {
  static const std::vector<int> allowed = platform::allowed_cpus();
  if (auto pin = platform::env("DPTRAIN_PIN_THREADS"); pin && *pin == "0") return -1;
  return devices > 1 && devices == allowed.size() ? allowed[device] : -1;
}

}  // namespace

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
  cpu_report_.loaded = true;  // built in
  cpu_report_.requested = config.want_cpu;
  if (config.want_cpu) {
    size_t cpus = resolve_cpu_device_count(config.cpu_devices);
    for (size_t i = 0; i < cpus; ++i)
      devices_.push_back(std::make_unique<CpuDevice>(i, config.cpu_memory_limit, pin_cpu(i, cpus)));
    cpu_report_.device_count = cpus;
  } else {
    cpu_report_.reason = "CPU devices were not requested (device selection: CUDA only)";
  }
  first_cuda_ = devices_.size();
  if (config.want_cuda) {
    CudaDiscovery cuda = discover_cuda_devices();
    cuda_report_ = std::move(cuda.report);
    cuda_peer_access_ = std::move(cuda.peer_access);
    for (auto &d : cuda.devices) devices_.push_back(std::move(d));
  } else {
    cuda_report_.reason = "CUDA devices were not requested (device selection: CPU only)";
  }
}

const BackendReport &Context::backend_report(dpt_device_kind kind) const {
  return kind == DPT_DEVICE_CUDA ? cuda_report_ : cpu_report_;
}

bool Context::can_access_peer(size_t index, size_t peer) const {
  if (index < first_cuda_ || peer < first_cuda_ || index >= devices_.size() || peer >= devices_.size())
    return false;
  return cuda_peer_access_[index - first_cuda_][peer - first_cuda_];
}

}  // namespace dpt
