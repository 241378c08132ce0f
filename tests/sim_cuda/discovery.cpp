// Discovery: DPTRAIN_SIM_CUDA_DEVICES devices named "dptrain simulated GPU" (compute capability 9.0, 132
// SMs, DPTRAIN_SIM_CUDA_MEMORY bytes each, every pair peer-capable), and a self-test that runs a dense
// layer through the simulator's own members and queue and checks it against a host loop.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "sim.hpp"

namespace dpt_sim {

namespace {

int bad_ordinal(const Error &e, int ordinal, const char *call, int count) {
  return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: %s: no such device (%d CUDA %s)", ordinal,
                call, count, count == 1 ? "device" : "devices");
}

// Checks a device's ordinal for call: 0 or a report.
int check_ordinal(const Error &e, int ordinal, const char *call) {
  int count = 0;
  if (const int rc = device_count_or_report(e, ordinal, call, count)) return rc;
  if (ordinal < 0 || ordinal >= count) return bad_ordinal(e, ordinal, call, count);
  if (fault(call, ordinal) != Fault::kNone) return simulated_failure(e, ordinal, call, false);
  return 0;
}

#define DPT_SIM_CHECK(call_expression)                 \
  do {                                                 \
    if (const int rc_ = (call_expression)) return rc_; \
  } while (0)

// The self-test proper on a context of the device.
int self_test_on(dpt_backend_context *ctx, int ordinal, const Error &e) {
  const size_t n = 3, in = 5, out = 4;
  std::vector<float> x(n * in), w(out * in + out), y(n * out), want(n * out);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 7) - 3) * 0.5f;
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i % 5) - 2) * 0.25f;
  for (size_t s = 0; s < n; ++s)
    for (size_t o = 0; o < out; ++o) {
      float acc = 0.0f;
      for (size_t i = 0; i < in; ++i) acc += x[s * in + i] * w[o * in + i];
      want[s * out + o] = acc + w[out * in + o];
    }
  void *dx = nullptr, *dw = nullptr, *dy = nullptr;
  DPT_SIM_CHECK(mem_alloc(ctx, x.size() * sizeof(float), &dx, e.text, e.size));
  DPT_SIM_CHECK(mem_alloc(ctx, w.size() * sizeof(float), &dw, e.text, e.size));
  DPT_SIM_CHECK(mem_alloc(ctx, y.size() * sizeof(float), &dy, e.text, e.size));
  DPT_SIM_CHECK(copy_to_device(ctx, dx, x.data(), x.size() * sizeof(float), e.text, e.size));
  DPT_SIM_CHECK(copy_to_device(ctx, dw, w.data(), w.size() * sizeof(float), e.text, e.size));
  const float *weights = static_cast<const float *>(dw);
  DPT_SIM_CHECK(dense_forward(ctx, n, in, out, static_cast<const float *>(dx), weights, weights + out * in,
                              static_cast<float *>(dy), e.text, e.size));
  DPT_SIM_CHECK(copy_to_host(ctx, y.data(), dy, y.size() * sizeof(float), e.text, e.size));
  DPT_SIM_CHECK(context_synchronize(ctx, e.text, e.size));
  for (size_t i = 0; i < y.size(); ++i)
    if (std::memcmp(&y[i], &want[i], sizeof(float)) != 0)
      return report(e, DPT_BACKEND_ERROR, "cuda:%d: self_test: dense_forward gave %.9g at %zu, expected %.9g",
                    ordinal, double(y[i]), i, double(want[i]));
  return 0;
}

}  // namespace

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

int self_test(int ordinal, char *error, size_t error_size) {
  const Error e{error, error_size};
  try {
    DPT_SIM_CHECK(check_ordinal(e, ordinal, "self_test"));
    dpt_backend_context *ctx = nullptr;
    DPT_SIM_CHECK(context_create(ordinal, nullptr, &ctx, error, error_size));
    const int rc = self_test_on(ctx, ordinal, e);
    context_destroy(ctx);
    return rc;
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "cuda:%d: self_test: unexpected C++ exception", ordinal);
  }
}

}  // namespace dpt_sim
