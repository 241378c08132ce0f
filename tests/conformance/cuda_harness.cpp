#include "cuda_harness.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backend/module_loader.hpp"
#include "core/rng.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
extern "C" {
#include <cmocka.h>
}

namespace cuda_test {

bool start(int argc, char **argv) {
  setenv("DPTRAIN_BACKEND_PATH", DPT_TEST_MODULE_DIR, 0);
  if (argc == 1) return true;
  if (argc == 3 && std::strcmp(argv[1], "--only") == 0) {
    cmocka_set_test_filter(argv[2]);
    return true;
  }
  if (argc == 3 && std::strcmp(argv[1], "--skip") == 0) {
    cmocka_set_skip_filter(argv[2]);
    return true;
  }
  std::fprintf(stderr, "usage: %s [--only PATTERN | --skip PATTERN]\n", argv[0]);
  return false;
}

const dpt_backend_v2 &module_or_skip() {
  const dpt::BackendModule m = dpt::load_cuda_backend();
  if (m.api == nullptr) {
    print_message("CUDA module unavailable (%s): skipped\n", m.reason.c_str());
    skip();
  }
  return *m.api;
}

int gpu_count_or_skip(const dpt_backend_v2 &api) {
  int count = 0;
  char reason[512] = "";
  if (api.device_count(&count, reason, sizeof reason) != 0 || count == 0) {
    print_message("no CUDA device (%s): skipped\n", reason);
    skip();
  }
  return count;
}

const dpt_backend_test_v1 &test_extension(const dpt_backend_v2 &api) {
  const auto *t = static_cast<const dpt_backend_test_v1 *>(api.get_extension(DPT_BACKEND_TEST_EXTENSION));
  if (t == nullptr) fail_msg("the module has no %s extension", DPT_BACKEND_TEST_EXTENSION);
  assert_true(t->struct_size >= sizeof(dpt_backend_test_v1));
  assert_non_null(t->self_test);
  assert_non_null(t->comm_inject_hang);
  return *t;
}

void check(int rc, const char *call, const char *error) {
  if (rc != 0) fail_msg("%s returned %d: %s", call, rc, error);
}

dpt_tensor tensor(const void *data, const std::vector<int64_t> &dims) {
  assert_true(dims.size() <= DPT_OP_MAX_RANK);
  dpt_tensor t;
  std::memset(&t, 0, sizeof t);
  t.data = const_cast<void *>(data);
  t.dtype = DPT_DTYPE_F32;
  t.rank = int32_t(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) t.dims[i] = dims[i];
  return t;
}

dpt_op_call op_call(const char *op, int64_t n, const std::vector<int64_t> &ints) {
  assert_true(ints.size() <= DPT_OP_MAX_ATTRS);
  dpt_op_call c;
  std::memset(&c, 0, sizeof c);
  c.op = op;
  c.n = n;
  for (size_t i = 0; i < ints.size(); ++i) c.ints[i] = ints[i];
  c.input_count = 1;
  return c;
}

Gpu::Gpu(uint32_t flags, int ordinal) : ordinal_(ordinal) {
  api_ = &module_or_skip();
  gpu_count_or_skip(*api_);
  dpt_backend_context_options options;
  std::memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.flags = flags;
  check(api_->context_create(ordinal, &options, &ctx_, error, sizeof error), "context_create", error);
}

Gpu::~Gpu() {
  if (api_ != nullptr) api_->context_destroy(ctx_);
}

void *Gpu::alloc(size_t bytes) {
  void *p = nullptr;
  check(api_->mem_alloc(ctx_, bytes, &p, error, sizeof error), "mem_alloc", error);
  return p;
}

float *Gpu::upload(const std::vector<float> &host) {
  auto *p = static_cast<float *>(alloc(std::max<size_t>(1, host.size()) * sizeof(float)));
  check(api_->copy_to_device(ctx_, p, host.data(), host.size() * sizeof(float), error, sizeof error),
        "copy_to_device", error);
  sync();  // the host vector may go away
  return p;
}

int32_t *Gpu::upload(const std::vector<int32_t> &host) {
  auto *p = static_cast<int32_t *>(alloc(std::max<size_t>(1, host.size()) * sizeof(int32_t)));
  check(api_->copy_to_device(ctx_, p, host.data(), host.size() * sizeof(int32_t), error, sizeof error),
        "copy_to_device", error);
  sync();
  return p;
}

std::vector<float> Gpu::download(const float *device, size_t count) {
  std::vector<float> host(count);
  download_bytes(host.data(), device, count * sizeof(float));
  return host;
}

void Gpu::download_bytes(void *host, const void *device, size_t bytes) {
  sync();
  check(api_->copy_to_host(ctx_, host, device, bytes, error, sizeof error), "copy_to_host", error);
  sync();
}

void Gpu::sync() {
  check(api_->context_synchronize(ctx_, error, sizeof error), "context_synchronize", error);
}

std::vector<float> uniform(size_t count, uint64_t seed, float lo, float hi) {
  dpt::Rng rng(seed);
  std::vector<float> v(count);
  for (float &x : v) x = lo + (hi - lo) * rng.uniform();
  return v;
}

std::vector<float> integers(size_t count, uint64_t seed, int lo, int hi) {
  dpt::Rng rng(seed);
  std::vector<float> v(count);
  for (float &x : v) x = float(lo + int64_t(rng.below(uint64_t(hi - lo + 1))));
  return v;
}

void expect_close(const char *what, const std::vector<float> &got, const std::vector<float> &want,
                  const std::vector<float> *scale, double rel, double abs) {
  assert_int_equal(got.size(), want.size());
  double worst = 0.0;  // largest |error| / bound
  size_t worst_at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double s = scale != nullptr ? double((*scale)[i]) : std::fabs(double(want[i]));
    const double bound = rel * s + abs;
    const double error = std::fabs(double(got[i]) - double(want[i]));
    const double ratio = bound > 0.0 ? error / bound : (error > 0.0 ? INFINITY : 0.0);
    if (!(ratio <= worst) || std::isnan(error)) {
      worst = std::isnan(error) ? INFINITY : ratio;
      worst_at = i;
    }
  }
  print_message("%-44s %8zu values, worst error %.3g of its bound (at %zu: %.9g vs %.9g)\n", what, got.size(),
                worst, worst_at, got.empty() ? 0.0 : double(got[worst_at]),
                want.empty() ? 0.0 : double(want[worst_at]));
  if (!(worst <= 1.0))
    fail_msg("%s: element %zu is %.9g, expected %.9g (bound %.3g * scale + %.3g)", what, worst_at,
             double(got[worst_at]), double(want[worst_at]), rel, abs);
}

void expect_bitwise(const char *what, const std::vector<float> &got, const std::vector<float> &want) {
  assert_int_equal(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0)
      fail_msg("%s: element %zu is %.9g, expected exactly %.9g", what, i, double(got[i]), double(want[i]));
  print_message("%-44s %8zu values, bitwise equal\n", what, got.size());
}

}  // namespace cuda_test
