// Discovery: DPTRAIN_SIM_CUDA_DEVICES devices named "dptrain simulated GPU" (compute capability 9.0, 132
// SMs, DPTRAIN_SIM_CUDA_MEMORY bytes each, every pair peer-capable).
#include <cstdio>
#include <cstring>

#include "sim.hpp"

#define DPT_SIM_CHECK(call_expression)                 \
  do {                                                 \
    if (const int rc_ = (call_expression)) return rc_; \
  } while (0)

namespace dpt_sim {

namespace {

int bad_ordinal(const Error &e, int ordinal, const char *call, int count) {
  return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: no such device (%d CUDA %s)", ordinal,
                call, count, count == 1 ? "device" : "devices");
}

}  // namespace

int check_ordinal(const Error &e, int ordinal, const char *call) {
  int count = 0;
  if (const int rc = device_count_or_report(e, ordinal, call, count)) return rc;
  if (ordinal < 0 || ordinal >= count) return bad_ordinal(e, ordinal, call, count);
  if (fault(call, ordinal) != Fault::kNone) return simulated_failure(e, ordinal, call, false);
  return 0;
}

int device_count(int *count, char *error, size_t error_size) {
  const Error e{error, error_size};
  if (count == nullptr) return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "device_count: NULL count");
  *count = 0;
  try {
    if (fault("device_count", kAnyOrdinal) != Fault::kNone)
      return report(e, DPT_BACKEND_ERROR, "device_count: simulated failure (DPTRAIN_SIM_CUDA_FAIL)");
    int n = 0;
    if (const int rc = device_count_or_report(e, 0, nullptr, n)) return rc;
    *count = n;
    return 0;
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "device_count: unexpected C++ exception");
  }
}

int device_props(int ordinal, dpt_backend_device_props *props, char *error, size_t error_size) {
  const Error e{error, error_size};
  if (props == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: device_props: NULL props", ordinal);
  std::memset(props, 0, sizeof *props);
  try {
    DPT_SIM_CHECK(check_ordinal(e, ordinal, "device_props"));
    const uint64_t capacity = config().capacity;
    std::snprintf(props->name, sizeof props->name, "dptrain simulated GPU");
    std::snprintf(props->pci_bus_id, sizeof props->pci_bus_id, "0000:%02x:00.0", unsigned(ordinal));
    props->total_memory = capacity;
    props->free_memory = capacity - reserved_bytes(ordinal);
    props->compute_capability_major = 9;
    props->compute_capability_minor = 0;
    props->multiprocessor_count = 132;
    return 0;
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "cuda:%d: device_props: unexpected C++ exception", ordinal);
  }
}

int can_access_peer(int ordinal, int peer, int *can_access, char *error, size_t error_size) {
  const Error e{error, error_size};
  if (can_access == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: can_access_peer: NULL result", ordinal);
  *can_access = 0;
  try {
    DPT_SIM_CHECK(check_ordinal(e, ordinal, "can_access_peer"));
    int count = 0;
    device_count_or_report(e, ordinal, "can_access_peer", count);
    if (peer < 0 || peer >= count) return bad_ordinal(e, peer, "can_access_peer", count);
    *can_access = ordinal != peer ? 1 : 0;  // as cudaDeviceCanAccessPeer: a device is not its own peer
    return 0;
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "cuda:%d: can_access_peer: unexpected C++ exception", ordinal);
  }
}

void versions(dpt_backend_versions *out) {
  if (out == nullptr) return;
  std::memset(out, 0, sizeof *out);
  out->runtime_version = 13000;
  out->driver_version = 13000;
  std::snprintf(out->text, sizeof out->text,
                "simulated CUDA backend (tests/sim_cuda), no GPU: reports CUDA runtime 13.0, driver 13.0");
}

}  // namespace dpt_sim
