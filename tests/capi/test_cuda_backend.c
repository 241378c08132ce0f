/*
 * The CUDA backend through the public API: when libdptrain_cuda.so is loaded (only on request), how a
 * missing or broken module and a machine without a driver or GPU are reported, and what CUDA devices
 * look like. Without a GPU the GPU-only cases are reported as SKIPPED, never as passed.
 *
 * The cases run in order: the module, once loaded, stays loaded for the life of the process, so the
 * cases that must see it unloaded come first.
 *
 * Built with DPT_TEST_CUDA_MODULE (1 when this build has the module) and DPT_TEST_MODULE_DIR (the
 * directory of libdptrain.so, where the module is built).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dptrain/dptrain.h>

#ifndef DPT_TEST_CUDA_MODULE
#define DPT_TEST_CUDA_MODULE 0
#endif
#ifndef DPT_TEST_MODULE_DIR
#define DPT_TEST_MODULE_DIR "."
#endif

enum { CPU_DEVICES = 2 };

#define ASSERT_OK(call)                                                                                \
  do {                                                                                                 \
    dpt_status s_ = (call);                                                                            \
    if (s_ != DPT_OK) fail_msg("%s: %s (%s)", #call, dpt_status_string(s_), dpt_last_error_message()); \
  } while (0)

/* 1 when a mapping of this process has a path containing name (/proc/self/maps). */
static int is_mapped(const char *name) {
  char line[4096];
  int found = 0;
  FILE *maps = fopen("/proc/self/maps", "r");
  assert_non_null(maps);
  while (!found && fgets(line, sizeof line, maps) != NULL) found = strstr(line, name) != NULL;
  fclose(maps);
  return found;
}

static dpt_context *make_context(dpt_device_selection selection) {
  dpt_context_options o;
  dpt_context *c = NULL;
  dpt_context_options_init(&o);
  o.cpu_devices = CPU_DEVICES;
  o.device_selection = selection;
  ASSERT_OK(dpt_context_create(&c, &o));
  return c;
}

static dpt_backend_info backend(const dpt_context *c, dpt_device_kind kind) {
  dpt_backend_info info;
  memset(&info, 0xA5, sizeof info);
  info.struct_size = sizeof info;
  ASSERT_OK(dpt_backend_get_info(c, kind, &info));
  assert_int_equal(info.struct_size, sizeof info);
  assert_int_equal(info.kind, kind);
  /* Text fields are NUL-terminated within their arrays. */
  assert_non_null(memchr(info.reason, '\0', sizeof info.reason));
  assert_non_null(memchr(info.module_path, '\0', sizeof info.module_path));
  assert_non_null(memchr(info.versions, '\0', sizeof info.versions));
  assert_null(strchr(info.reason, '\n'));
  return info;
}

static size_t cuda_device_count(void) {
  dpt_context *c = make_context(DPT_DEVICES_CUDA);
  size_t n = 0;
  ASSERT_OK(dpt_device_count(c, &n));
  dpt_context_destroy(c);
  return n;
}

/* A temporary directory, optionally holding a file named libdptrain_cuda.so with the given content. */
static void make_backend_dir(char *dir, size_t capacity, const char *module_content) {
  snprintf(dir, capacity, "%s/dptrain-backend-XXXXXX", getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
  assert_non_null(mkdtemp(dir));
  if (module_content != NULL) {
    char path[512];
    FILE *f;
    snprintf(path, sizeof path, "%s/libdptrain_cuda.so", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(module_content, f);
    fclose(f);
  }
}

static void remove_backend_dir(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/libdptrain_cuda.so", dir);
  unlink(path);
  rmdir(dir);
}

/* ---- before the module is loaded ------------------------------------------------------------ */

/* Default and CPU-only contexts never open the module, and say that CUDA was not requested. */
static void test_cpu_only_context_does_not_load_module(void **state) {
  dpt_context *c = NULL;
  dpt_backend_info cpu, cuda;
  size_t n = 0;
  (void)state;
  ASSERT_OK(dpt_context_create(&c, NULL));
  dpt_context_destroy(c);
  c = make_context(DPT_DEVICES_CPU);
  ASSERT_OK(dpt_device_count(c, &n));
  assert_int_equal(n, CPU_DEVICES);
  cpu = backend(c, DPT_DEVICE_CPU);
  assert_int_equal(cpu.requested, 1);
  assert_int_equal(cpu.loaded, 1);
  assert_int_equal(cpu.device_count, CPU_DEVICES);
  assert_string_equal(cpu.reason, "");
  cuda = backend(c, DPT_DEVICE_CUDA);
  assert_int_equal(cuda.requested, 0);
  assert_int_equal(cuda.loaded, 0);
  assert_int_equal(cuda.device_count, 0);
  assert_non_null(strstr(cuda.reason, "not requested"));
  assert_string_equal(cuda.module_path, "");
  dpt_context_destroy(c);
  assert_false(is_mapped("libdptrain_cuda"));
  assert_false(is_mapped("libcudart"));
}

/* DPTRAIN_BACKEND_PATH naming an empty directory: no CUDA devices, "not found in <dir>". */
static void test_backend_path_without_module(void **state) {
  char dir[256], expected[400];
  dpt_context *c;
  dpt_backend_info cuda;
  size_t n = 0;
  (void)state;
  make_backend_dir(dir, sizeof dir, NULL);
  setenv("DPTRAIN_BACKEND_PATH", dir, 1);
  c = make_context(DPT_DEVICES_ALL);
  unsetenv("DPTRAIN_BACKEND_PATH");
  ASSERT_OK(dpt_device_count(c, &n));
  assert_int_equal(n, CPU_DEVICES);
  cuda = backend(c, DPT_DEVICE_CUDA);
  assert_int_equal(cuda.requested, 1);
  assert_int_equal(cuda.loaded, 0);
  assert_int_equal(cuda.device_count, 0);
  snprintf(expected, sizeof expected, "libdptrain_cuda.so not found in %s", dir);
  if (strstr(cuda.reason, expected) == NULL) fail_msg("reason '%s' lacks '%s'", cuda.reason, expected);
  dpt_context_destroy(c);
  remove_backend_dir(dir);
  assert_false(is_mapped("libdptrain_cuda"));
}

/* A file of that name that is not a shared library: reported, not loaded, no crash. */
static void test_backend_path_with_broken_module(void **state) {
  char dir[256];
  dpt_context *c;
  dpt_backend_info cuda;
  (void)state;
  make_backend_dir(dir, sizeof dir, "not an ELF file\n");
  setenv("DPTRAIN_BACKEND_PATH", dir, 1);
  c = make_context(DPT_DEVICES_CUDA);
  unsetenv("DPTRAIN_BACKEND_PATH");
  cuda = backend(c, DPT_DEVICE_CUDA);
  assert_int_equal(cuda.loaded, 0);
  assert_int_equal(cuda.device_count, 0);
  if (strstr(cuda.reason, "could not be loaded") == NULL) fail_msg("reason: '%s'", cuda.reason);
  dpt_context_destroy(c);
  remove_backend_dir(dir);
}

/* ---- the module loads (this machine: no driver, no GPU) --------------------------------------- */

/* Found next to libdptrain.so (or through a search list whose first directory lacks it); loaded even
 * without a driver; the reason of zero devices names the driver when there is none. */
static void test_module_loads_and_explains(void **state) {
  char dir[256], search[1024];
  dpt_context *c;
  dpt_backend_info cuda, cpu;
  size_t n = 0;
  (void)state;
  make_backend_dir(dir, sizeof dir, NULL);
  snprintf(search, sizeof search, "%s:%s", dir, DPT_TEST_MODULE_DIR);
  setenv("DPTRAIN_BACKEND_PATH", search, 1);
  c = make_context(DPT_DEVICES_CUDA);
  unsetenv("DPTRAIN_BACKEND_PATH");
  remove_backend_dir(dir);
  cuda = backend(c, DPT_DEVICE_CUDA);
  cpu = backend(c, DPT_DEVICE_CPU);
  assert_int_equal(cpu.requested, 0);
  assert_int_equal(cpu.device_count, 0);
  assert_non_null(strstr(cpu.reason, "not requested"));
  ASSERT_OK(dpt_device_count(c, &n));
  assert_int_equal(n, cuda.device_count);
  print_message("cuda backend: loaded %d, %zu device(s), reason '%s', versions '%s'\n", (int)cuda.loaded,
                cuda.device_count, cuda.reason, cuda.versions);
  if (!DPT_TEST_CUDA_MODULE) {
    assert_int_equal(cuda.loaded, 0);
    assert_non_null(strstr(cuda.reason, "not found"));
    assert_non_null(strstr(cuda.reason, "built without the CUDA module"));
    dpt_context_destroy(c);
    return;
  }
  assert_int_equal(cuda.loaded, 1);
  assert_true(is_mapped("libdptrain_cuda"));
  assert_non_null(strstr(cuda.module_path, "/libdptrain_cuda.so"));
  assert_non_null(strstr(cuda.versions, "cuBLAS"));
  assert_non_null(strstr(cuda.versions, "cuDNN"));
  assert_non_null(strstr(cuda.versions, "NCCL"));
  assert_true(cuda.runtime_version >= 12000);
  if (cuda.device_count == 0) {
    assert_true(cuda.reason[0] != '\0');
    if (cuda.driver_version == 0 && strstr(cuda.reason, "driver") == NULL)
      fail_msg("no driver, but the reason does not say so: '%s'", cuda.reason);
  }
  dpt_context_destroy(c);
}

/* CPU devices come first in an "all" context, with the appended device_info fields; training on them
 * works whatever the CUDA backend found. */
static void test_all_context_cpu_devices(void **state) {
  dpt_context *c = make_context(DPT_DEVICES_ALL);
  dpt_model *m = NULL;
  dpt_trainer *t = NULL;
  dpt_trainer_options o;
  size_t cpu_indices[CPU_DEVICES] = {0, 1};
  size_t n = 0, i, j;
  (void)state;
  ASSERT_OK(dpt_device_count(c, &n));
  assert_int_equal(n, CPU_DEVICES + backend(c, DPT_DEVICE_CUDA).device_count);
  for (i = 0; i < CPU_DEVICES; ++i) {
    dpt_device_info info;
    memset(&info, 0xA5, sizeof info);
    info.struct_size = sizeof info;
    ASSERT_OK(dpt_device_get_info(c, i, &info));
    assert_int_equal(info.kind, DPT_DEVICE_CPU);
    assert_int_equal(info.ordinal, i);
    assert_int_equal(info.free_memory, info.total_memory - info.memory_in_use);
    assert_int_equal(info.compute_capability_major, 0);
    assert_int_equal(info.compute_capability_minor, 0);
    assert_int_equal(info.multiprocessor_count, 0);
    assert_string_equal(info.pci_bus_id, "");
    assert_string_equal(info.product_name, "");
    for (j = 0; j < n; ++j) {
      int can = -1;
      ASSERT_OK(dpt_device_can_access_peer(c, i, j, &can));
      assert_int_equal(can, 0);
      ASSERT_OK(dpt_device_can_access_peer(c, j, i, &can));
      assert_int_equal(can, 0);
    }
  }
  ASSERT_OK(dpt_model_create_builtin(&m, "mlp"));
  dpt_trainer_options_init(&o);
  o.devices = cpu_indices;
  o.device_count = CPU_DEVICES;
  ASSERT_OK(dpt_trainer_create(&t, c, m, &o, NULL));
  dpt_trainer_destroy(t);
  dpt_model_destroy(m);
  dpt_context_destroy(c);
}

/* ---- GPU-only cases: SKIPPED without a GPU ---------------------------------------------------- */

static void skip_without_gpu(void) {
  if (cuda_device_count() == 0) {
    print_message("no CUDA device here: skipped\n");
    skip();
  }
}

/* Every CUDA device describes itself: name, memory, compute capability, SMs, PCI bus id. */
static void test_gpu_device_info(void **state) {
  dpt_context *c;
  size_t n = 0, i, cuda = 0;
  (void)state;
  skip_without_gpu();
  c = make_context(DPT_DEVICES_ALL);
  ASSERT_OK(dpt_device_count(c, &n));
  for (i = CPU_DEVICES; i < n; ++i) {
    dpt_device_info info;
    char name[64];
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ASSERT_OK(dpt_device_get_info(c, i, &info));
    print_message("%s: %s, cc %d.%d, %d SMs, %llu of %llu bytes free, pci %s\n", info.name, info.product_name,
                  (int)info.compute_capability_major, (int)info.compute_capability_minor,
                  (int)info.multiprocessor_count, (unsigned long long)info.free_memory,
                  (unsigned long long)info.total_memory, info.pci_bus_id);
    assert_int_equal(info.kind, DPT_DEVICE_CUDA);
    assert_int_equal(info.ordinal, cuda);
    snprintf(name, sizeof name, "cuda:%zu", cuda);
    assert_string_equal(info.name, name);
    assert_true(info.product_name[0] != '\0');
    assert_true(info.pci_bus_id[0] != '\0');
    assert_true(info.total_memory > 0);
    assert_true(info.free_memory > 0 && info.free_memory <= info.total_memory);
    assert_true(info.compute_capability_major >= 7); /* CUDA 13 supports sm_75 and later */
    assert_true(info.multiprocessor_count > 0);
    ++cuda;
  }
  assert_int_equal(cuda, backend(c, DPT_DEVICE_CUDA).device_count);
  assert_string_equal(backend(c, DPT_DEVICE_CUDA).reason, "");
  dpt_context_destroy(c);
}

/* The peer-access matrix: never a device and itself; printed for the record. */
static void test_gpu_peer_matrix(void **state) {
  dpt_context *c;
  size_t n = 0, i, j;
  (void)state;
  skip_without_gpu();
  c = make_context(DPT_DEVICES_CUDA);
  ASSERT_OK(dpt_device_count(c, &n));
  for (i = 0; i < n; ++i) {
    for (j = 0; j < n; ++j) {
      int can = -1;
      ASSERT_OK(dpt_device_can_access_peer(c, i, j, &can));
      assert_true(can == 0 || can == 1);
      if (i == j) assert_int_equal(can, 0);
      print_message("%s", j + 1 < n ? (can ? "1 " : "0 ") : (can ? "1\n" : "0\n"));
    }
  }
  dpt_context_destroy(c);
}

/* One training step of the mlp on the given devices at a precision (seed 7): the parameters of replica 0,
 * after checking that every replica holds the same bits. A new float array of the model's parameters. */
static float *step_parameters(dpt_context *c, dpt_model *m, size_t *devices, size_t device_count,
                              dpt_precision precision, dpt_shard_mode shard, const float *x,
                              const int32_t *y) {
  dpt_trainer *t = NULL;
  dpt_trainer_options o;
  dpt_step_result result;
  size_t count = 0, r;
  float *p, *q;
  dpt_trainer_options_init(&o);
  o.devices = devices;
  o.device_count = device_count;
  o.precision = precision;
  o.shard = shard;
  o.seed = 7;
  o.gpu_flags = DPT_GPU_DETERMINISTIC;
  ASSERT_OK(dpt_trainer_create(&t, c, m, &o, NULL));
  memset(&result, 0, sizeof result);
  result.struct_size = sizeof result;
  ASSERT_OK(dpt_trainer_step(t, x, 8 * 784, y, 8, &result));
  assert_true(result.applied && result.loss > 0.0);
  assert_false(result.skipped_overflow);
  assert_true(result.loss_scale == (precision == DPT_PRECISION_FP16 ? 65536.0 : 1.0));
  ASSERT_OK(dpt_model_parameter_count(m, &count));
  p = malloc(count * sizeof *p);
  q = malloc(count * sizeof *q);
  assert_non_null(p);
  assert_non_null(q);
  ASSERT_OK(dpt_trainer_get_replica_parameters(t, 0, p, count));
  for (r = 1; r < device_count; ++r) {
    ASSERT_OK(dpt_trainer_get_replica_parameters(t, r, q, count));
    assert_memory_equal(p, q, count * sizeof *p);
  }
  free(q);
  dpt_trainer_destroy(t);
  return p;
}

static double max_difference(const float *a, const float *b, size_t count) {
  double most = 0.0;
  size_t i;
  for (i = 0; i < count; ++i) {
    const double d = a[i] > b[i] ? (double)a[i] - b[i] : (double)b[i] - a[i];
    if (d > most) most = d;
  }
  return most;
}

static double distance(const float *a, const float *b, size_t count) {
  double sum = 0.0;
  size_t i;
  for (i = 0; i < count; ++i) sum += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
  return sqrt(sum);
}

/* bf16 and fp16 on GPUs (two replicas sharing one): the step is at least 4x closer to the CPU devices'
 * step at the same precision than to the GPUs' float32 step, in the Euclidean distance of the parameters.
 * The GPU rounds the same inputs to 16 bits and sums in float32 in another order: its distance to the CPU
 * is float32 summation noise plus the rare sum that lands on the other side of a 16-bit rounding boundary,
 * while 16 bits against float32 moves every product. (Not the largest difference: one element on the other
 * side of a float16 boundary is as far as float16 from float32, 5.6e-6 both on the first GPU run.) The
 * simulator runs the CPU kernels: there the GPU and CPU steps are bitwise equal. */
/* A trainer of options o takes one step of 8 samples and is destroyed. */
static void one_step(dpt_context *c, dpt_model *m, const dpt_trainer_options *o, const float *x,
                     const int32_t *y) {
  dpt_trainer *t = NULL;
  dpt_step_result result;
  ASSERT_OK(dpt_trainer_create(&t, c, m, o, NULL));
  memset(&result, 0, sizeof result);
  result.struct_size = sizeof result;
  ASSERT_OK(dpt_trainer_step(t, x, 8 * 784, y, 8, &result));
  assert_true(result.applied && result.loss > 0.0);
  dpt_trainer_destroy(t);
}

static void check_gpu_precisions(dpt_context *c, dpt_model *m, const float *x, const int32_t *y) {
  size_t gpus[2] = {CPU_DEVICES, CPU_DEVICES}, cpus[2] = {0, 1}, count = 0;
  const dpt_precision precisions[2] = {DPT_PRECISION_BF16, DPT_PRECISION_FP16};
  float *fp32 = step_parameters(c, m, gpus, 2, DPT_PRECISION_FP32, DPT_SHARD_NONE, x, y);
  int i;
  ASSERT_OK(dpt_model_parameter_count(m, &count));
  for (i = 0; i < 2; ++i) {
    float *gpu = step_parameters(c, m, gpus, 2, precisions[i], DPT_SHARD_NONE, x, y);
    float *cpu = step_parameters(c, m, cpus, 2, precisions[i], DPT_SHARD_NONE, x, y);
    const double vs_cpu = distance(gpu, cpu, count), vs_fp32 = distance(gpu, fp32, count);
    print_message("precision %s: GPU vs CPU %.3g, GPU vs GPU float32 %.3g (largest differences %.3g, %.3g)\n",
                  i == 0 ? "bf16" : "fp16", vs_cpu, vs_fp32, max_difference(gpu, cpu, count),
                  max_difference(gpu, fp32, count));
    assert_true(vs_fp32 > 0.0);
    assert_true(vs_cpu <= vs_fp32 / 4);
    free(gpu);
    free(cpu);
  }
  free(fp32);
}

/* Training on GPUs through the C API: a trainer over one GPU and over two replicas sharing it (virtual
 * devices) steps, and the two replicas hold the same parameters; bf16 and fp16 (check_gpu_precisions); a
 * CPU device and a GPU in one trainer and unknown gpu_flags are refused with a clear status and nothing
 * half-built. */
static void test_gpu_trainer_through_c_api(void **state) {
  dpt_context *c;
  dpt_model *m = NULL;
  dpt_trainer *t = NULL;
  dpt_trainer_options o;
  dpt_step_result result;
  size_t gpu = CPU_DEVICES, twice[2] = {CPU_DEVICES, CPU_DEVICES}, mixed[2] = {0, CPU_DEVICES}, count = 0, i;
  float x[8 * 784];
  int32_t y[8];
  float *p0, *p1;
  (void)state;
  skip_without_gpu();
  for (i = 0; i < 8 * 784; ++i) x[i] = (float)((i * 7) % 13) / 13.0f;
  for (i = 0; i < 8; ++i) y[i] = (int32_t)(i % 10);
  c = make_context(DPT_DEVICES_ALL);
  ASSERT_OK(dpt_model_create_builtin(&m, "mlp"));
  assert_int_equal(dpt_trainer_create(&t, c, m, NULL, NULL), DPT_ERROR_UNSUPPORTED); /* all devices */
  assert_null(t);
  assert_non_null(strstr(dpt_last_error_message(), "all be CPU devices or all CUDA devices"));
  dpt_trainer_options_init(&o);
  o.devices = mixed;
  o.device_count = 2;
  assert_int_equal(dpt_trainer_create(&t, c, m, &o, NULL), DPT_ERROR_UNSUPPORTED);
  assert_null(t);
  o.devices = &gpu;
  o.device_count = 1;
  o.gpu_flags = 4u;
  assert_int_equal(dpt_trainer_create(&t, c, m, &o, NULL), DPT_ERROR_INVALID_ARGUMENT);
  assert_null(t);
  o.gpu_flags = DPT_GPU_DETERMINISTIC;
  o.devices = twice;
  o.device_count = 2;
  { /* sharded gradients and parameters on two replicas sharing the GPU: the unsharded step's bits */
    float *plain = step_parameters(c, m, twice, 2, DPT_PRECISION_FP32, DPT_SHARD_NONE, x, y);
    const dpt_shard_mode modes[2] = {DPT_SHARD_GRADIENTS, DPT_SHARD_PARAMETERS};
    size_t n = 0;
    int k;
    ASSERT_OK(dpt_model_parameter_count(m, &n));
    for (k = 0; k < 2; ++k) {
      float *sharded = step_parameters(c, m, twice, 2, DPT_PRECISION_FP32, modes[k], x, y);
      assert_memory_equal(plain, sharded, n * sizeof *plain);
      free(sharded);
    }
    free(plain);
  }
  o.shard = DPT_SHARD_OPTIMIZER;
  o.pipeline_stages = 2; /* a pipeline of GPUs: two stages sharing cuda:0, a step through the C API */
  one_step(c, m, &o, x, y);
  o.shard = DPT_SHARD_NONE;
  o.pipeline_stages = 0;
  o.devices = &gpu;
  o.device_count = 1;
  check_gpu_precisions(c, m, x, y);
  one_step(c, m, &o, x, y);
  o.devices = twice;
  o.device_count = 2;
  ASSERT_OK(dpt_trainer_create(&t, c, m, &o, NULL));
  ASSERT_OK(dpt_trainer_device_count(t, &count));
  assert_int_equal(count, 2);
  memset(&result, 0, sizeof result);
  result.struct_size = sizeof result;
  ASSERT_OK(dpt_trainer_step(t, x, 8 * 784, y, 8, &result));
  ASSERT_OK(dpt_model_parameter_count(m, &count));
  p0 = malloc(count * sizeof *p0);
  p1 = malloc(count * sizeof *p1);
  assert_non_null(p0);
  assert_non_null(p1);
  ASSERT_OK(dpt_trainer_get_replica_parameters(t, 0, p0, count));
  ASSERT_OK(dpt_trainer_get_replica_parameters(t, 1, p1, count));
  assert_memory_equal(p0, p1, count * sizeof *p0);
  dpt_trainer_destroy(t);
  /* A sharded optimizer (ZeRO stage 1) runs on GPUs: the bits of the unsharded step. */
  o.shard = DPT_SHARD_OPTIMIZER;
  ASSERT_OK(dpt_trainer_create(&t, c, m, &o, NULL));
  ASSERT_OK(dpt_trainer_step(t, x, 8 * 784, y, 8, &result));
  ASSERT_OK(dpt_trainer_get_replica_parameters(t, 1, p1, count));
  assert_memory_equal(p0, p1, count * sizeof *p0);
  dpt_trainer_destroy(t);
  free(p0);
  free(p1);
  dpt_model_destroy(m);
  dpt_context_destroy(c);
}

/* ---- the 16-bit gradient all-reduce on GPUs ------------------------------------------------- */

enum { WIRE_BATCH = 12, WIRE_PIXELS = 784 };

/* One step of the MLP on devices[0 .. k) of c with the given wire and bucket size, from the default
 * initialisation (seed 7); every replica's parameters into replicas[r * count ...]. */
static void wire_step(dpt_context *c, const dpt_model *m, const size_t *devices, size_t k, dpt_precision wire,
                      size_t bucket_bytes, size_t count, float *start, float *replicas) {
  static float x[WIRE_BATCH * WIRE_PIXELS];
  int32_t y[WIRE_BATCH];
  dpt_trainer *t = NULL;
  dpt_trainer_options o;
  dpt_step_result result;
  size_t i;
  for (i = 0; i < WIRE_BATCH * WIRE_PIXELS; ++i) x[i] = (float)((i * 7919u) % 1013u) / 1013.0f;
  for (i = 0; i < WIRE_BATCH; ++i) y[i] = (int32_t)((i * 3u) % 10u);
  dpt_trainer_options_init(&o);
  o.devices = devices;
  o.device_count = k;
  o.seed = 7;
  o.allreduce_dtype = wire;
  if (bucket_bytes > 0) o.bucket_bytes = bucket_bytes;
  ASSERT_OK(dpt_trainer_create(&t, c, m, &o, NULL));
  if (start != NULL) ASSERT_OK(dpt_trainer_get_parameters(t, start, count));
  memset(&result, 0, sizeof result);
  result.struct_size = sizeof result;
  ASSERT_OK(dpt_trainer_step(t, x, WIRE_BATCH * WIRE_PIXELS, y, WIRE_BATCH, &result));
  assert_true(result.applied);
  for (i = 0; i < k; ++i) ASSERT_OK(dpt_trainer_get_replica_parameters(t, i, replicas + i * count, count));
  dpt_trainer_destroy(t);
}

/* ||a - b|| / ||b - start||: the difference relative to how far the step moved the parameters. */
static double movement_error(const float *a, const float *b, const float *start, size_t n) {
  double diff = 0, moved = 0;
  size_t i;
  for (i = 0; i < n; ++i) {
    diff += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    moved += ((double)b[i] - start[i]) * ((double)b[i] - start[i]);
  }
  return sqrt(diff / moved);
}

/* A GPU trainer with a 16-bit gradient all-reduce (allreduce_dtype bf16 and fp16), K = 2 and 3 replicas on
 * distinct GPUs (NCCL; as many as there are GPUs) and on one shared GPU (cuda:0x2, cuda:0x3: the virtual
 * all-reduce), one SGD step of the MLP on 12 samples:
 * - the replicas are bitwise identical, and gradient buckets (every node its own) change no bit;
 * - the step is not bitwise the float32 wire's (the wire is used);
 * - against the 1-device step on a CPU device (float32, communicates nothing), the parameters' movement
 *   differs by at most 2u relative (u = 2^-8 for bfloat16, 2^-11 for float16: each replica's gradient is
 *   rounded once and the sum once, docs/precision.md's bound, which test_gradient_wire holds on CPU devices),
 *   plus 1e-4 for the backends' own float32 differences (test_gpu_training's GPU-vs-CPU tolerance; the
 *   simulated module runs the CPU kernels, so there they are nil);
 * - against K CPU devices with the same wire, within 2u + 1e-4 too: both round the same contributions and
 *   their sum the same way, and differ only in the order of the K float32 additions (the CPU ring starts
 *   each chunk at another device; the GPUs add in device order): where the two float32 sums straddle a
 *   rounding boundary of the type, the results are one step of the type apart, at most 2u of the element.
 *   With K = 2 the order does not matter, and the simulator gives the CPU's bits. */
static void test_gpu_allreduce_wire16(void **state) {
  const dpt_precision wires[2] = {DPT_PRECISION_BF16, DPT_PRECISION_FP16};
  const double units[2] = {1.0 / 256, 1.0 / 2048};
  const char *names[2] = {"bf16", "fp16"};
  dpt_context *gpus, *cpus;
  dpt_model *m = NULL;
  dpt_context_options co;
  size_t count = 0, gpu_count, w, layout, r;
  const size_t cpu[3] = {0, 1, 2};
  float *start, *reference, *wired, *bucketed, *plain, *on_cpu;
  (void)state;
  skip_without_gpu();
  gpu_count = cuda_device_count();
  gpus = make_context(DPT_DEVICES_ALL);
  dpt_context_options_init(&co);
  co.cpu_devices = 3;
  co.device_selection = DPT_DEVICES_CPU;
  ASSERT_OK(dpt_context_create(&cpus, &co));
  ASSERT_OK(dpt_model_create_builtin(&m, "mlp"));
  ASSERT_OK(dpt_model_parameter_count(m, &count));
  start = malloc(count * sizeof *start);
  reference = malloc(count * sizeof *reference);
  wired = malloc(3 * count * sizeof *wired);
  bucketed = malloc(3 * count * sizeof *bucketed);
  plain = malloc(3 * count * sizeof *plain);
  on_cpu = malloc(3 * count * sizeof *on_cpu);
  assert_true(start && reference && wired && bucketed && plain && on_cpu);
  wire_step(cpus, m, cpu, 1, DPT_PRECISION_FP32, 0, count, start, reference);
  for (w = 0; w < 2; ++w) {
    const double tolerance = 2 * units[w] + 1e-4;
    for (layout = 0; layout < 4; ++layout) {
      /* 0, 1: K = 2, 3 on distinct GPUs; 2, 3: K = 2, 3 sharing cuda:0 */
      const size_t k = 2 + layout % 2, shared = layout >= 2;
      size_t devices[3];
      double to_one, to_cpu;
      if (!shared && gpu_count < k) continue;
      for (r = 0; r < k; ++r) devices[r] = CPU_DEVICES + (shared ? 0 : r);
      wire_step(gpus, m, devices, k, wires[w], 0, count, NULL, wired);
      wire_step(gpus, m, devices, k, wires[w], 1, count, NULL, bucketed);
      wire_step(gpus, m, devices, k, DPT_PRECISION_FP32, 0, count, NULL, plain);
      wire_step(cpus, m, cpu, k, wires[w], 0, count, NULL, on_cpu);
      for (r = 0; r < k; ++r) {
        assert_memory_equal(wired + r * count, wired, count * sizeof *wired);
        assert_memory_equal(bucketed + r * count, wired, count * sizeof *wired);
      }
      assert_memory_not_equal(wired, plain, count * sizeof *wired);
      to_one = movement_error(wired, reference, start, count);
      to_cpu = movement_error(wired, on_cpu, start, count);
      print_message(
          "%s wire, %zu replicas %s: vs 1 CPU device %.2e (float32 wire %.2e), vs %zu CPU devices "
          "with the wire %.2e; tolerance %.2e\n",
          names[w], k, shared ? "sharing cuda:0" : "on distinct GPUs", to_one,
          movement_error(plain, reference, start, count), k, to_cpu, tolerance);
      assert_true(to_one <= tolerance);
      assert_true(to_cpu <= tolerance);
    }
  }
  free(start);
  free(reference);
  free(wired);
  free(bucketed);
  free(plain);
  free(on_cpu);
  dpt_model_destroy(m);
  dpt_context_destroy(cpus);
  dpt_context_destroy(gpus);
}

/* --only PATTERN or --skip PATTERN: run a subset of the cases (CTest runs the GPU cases as their own test).
 */
static int select_cases(int argc, char **argv) {
  if (argc == 1) return 0;
  if (argc == 3 && strcmp(argv[1], "--only") == 0) {
    cmocka_set_test_filter(argv[2]);
    return 0;
  }
  if (argc == 3 && strcmp(argv[1], "--skip") == 0) {
    cmocka_set_skip_filter(argv[2]);
    return 0;
  }
  fprintf(stderr, "usage: %s [--only PATTERN | --skip PATTERN]\n", argv[0]);
  return 1;
}

int main(int argc, char **argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cpu_only_context_does_not_load_module),
      cmocka_unit_test(test_backend_path_without_module),
      cmocka_unit_test(test_backend_path_with_broken_module),
      cmocka_unit_test(test_module_loads_and_explains),
      cmocka_unit_test(test_all_context_cpu_devices),
      cmocka_unit_test(test_gpu_device_info),
      cmocka_unit_test(test_gpu_peer_matrix),
      cmocka_unit_test(test_gpu_trainer_through_c_api),
      cmocka_unit_test(test_gpu_allreduce_wire16),
  };
  if (select_cases(argc, argv) != 0) return 2;
  return cmocka_run_group_tests(tests, NULL, NULL);
}
