// The CUDA module through its backend interface (backend/backend_interface.h), as the core loads it: the
// interface is complete, bad ordinals are errors with messages (never crashes), and, on each GPU, the
// module's self-test (its own kernel, cuBLAS, cuDNN and NCCL against host results) passes.
// Without the module or without a GPU the cases that need them are SKIPPED, never passed.
// Phase 2 of the CUDA backend adds here every kernel and collective against the CPU backend.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backend/backend_loader.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
extern "C" {
#include <cmocka.h>
}

namespace {

const dpt_backend_v1 *module_or_skip() {
  const dpt::BackendModule m = dpt::load_cuda_backend();
  if (m.api == nullptr) {
    print_message("CUDA module unavailable (%s): skipped\n", m.reason.c_str());
    skip();
  }
  return m.api;
}

int gpu_count_or_skip(const dpt_backend_v1 &api) {
  int count = 0;
  char reason[512] = "";
  if (api.device_count(&count, reason, sizeof reason) != 0 || count == 0) {
    print_message("no CUDA device (%s): skipped\n", reason);
    skip();
  }
  return count;
}

// The table is complete and describes itself.
void test_interface(void **) {
  const dpt_backend_v1 *api = module_or_skip();
  assert_int_equal(api->abi_version, DPT_BACKEND_ABI_VERSION);
  assert_true(api->struct_size >= sizeof(dpt_backend_v1));
  assert_string_equal(api->name, "cuda");
  dpt_backend_versions v;
  api->versions(&v);
  print_message("%s\n", v.text);
  assert_non_null(std::strstr(v.text, "CUDA runtime"));
  assert_true(v.runtime_version >= 12000);
}

// Without devices: a count of zero comes with a reason; with devices, no reason is needed.
void test_device_count(void **) {
  const dpt_backend_v1 *api = module_or_skip();
  int count = -1;
  char reason[512] = "";
  const int rc = api->device_count(&count, reason, sizeof reason);
  print_message("device_count: rc %d, count %d, reason '%s'\n", rc, count, reason);
  assert_true(count >= 0);
  if (rc != 0) {
    assert_int_equal(count, 0);
    assert_true(reason[0] != '\0');
    assert_null(std::strchr(reason, '\n'));
  } else {
    assert_true(count > 0);
  }
}

// Bad ordinals are errors naming the call, whatever the machine has.
void test_bad_ordinals(void **) {
  const dpt_backend_v1 *api = module_or_skip();
  dpt_backend_device_props props;
  char error[512] = "";
  assert_int_not_equal(api->device_props(-1, &props, error, sizeof error), 0);
  assert_true(error[0] != '\0');
  error[0] = '\0';
  assert_int_not_equal(api->device_props(100000, &props, error, sizeof error), 0);
  assert_true(error[0] != '\0');
  int can = -1;
  error[0] = '\0';
  assert_int_not_equal(api->can_access_peer(-1, 100000, &can, error, sizeof error), 0);
  assert_int_equal(can, 0);
  assert_true(error[0] != '\0');
  error[0] = '\0';
  assert_int_not_equal(api->self_test(100000, error, sizeof error), 0);
  assert_true(error[0] != '\0');
  print_message("last error: %s\n", error);
}

// GPU: every device's facts, and the self-test (kernel, cuBLAS, cuDNN, NCCL) on each.
void test_gpu_self_test(void **) {
  const dpt_backend_v1 *api = module_or_skip();
  const int count = gpu_count_or_skip(*api);
  for (int i = 0; i < count; ++i) {
    dpt_backend_device_props p;
    char error[512] = "";
    if (api->device_props(i, &p, error, sizeof error) != 0) fail_msg("device_props(%d): %s", i, error);
    print_message("cuda:%d: %s, cc %d.%d, %d SMs, %llu MiB (%llu free), %s\n", i, p.name,
                  int(p.compute_capability_major), int(p.compute_capability_minor),
                  int(p.multiprocessor_count), (unsigned long long)(p.total_memory >> 20),
                  (unsigned long long)(p.free_memory >> 20), p.pci_bus_id);
    if (api->self_test(i, error, sizeof error) != 0) fail_msg("self_test(cuda:%d): %s", i, error);
    print_message("cuda:%d: self-test passed (kernel, cuBLAS, cuDNN, NCCL)\n", i);
  }
}

// --only PATTERN or --skip PATTERN: run a subset of the cases (CTest runs the GPU cases as their own test).
bool select_cases(int argc, char **argv) {
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

}  // namespace

int main(int argc, char **argv) {
  // The core is linked into this binary, so "next to libdptrain" would be bin/: look where the module is
  // built.
  setenv("DPTRAIN_BACKEND_PATH", DPT_TEST_MODULE_DIR, 0);
  if (!select_cases(argc, argv)) return 2;
  const CMUnitTest tests[] = {
      cmocka_unit_test(test_interface),
      cmocka_unit_test(test_device_count),
      cmocka_unit_test(test_bad_ordinals),
      cmocka_unit_test(test_gpu_self_test),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
