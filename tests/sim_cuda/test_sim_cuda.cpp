// What only the simulated CUDA backend does (docs/cuda-sim.md), through its table as dlopen gives it:
// device pointers that the host cannot read, copies and kernels that run only when the context is
// synchronized, checked buffer arguments (host pointers, other devices, overruns, use after free), out of
// memory naming the device, injected failures (DPTRAIN_SIM_CUDA_FAIL), the order of the virtual all-reduce,
// and a hung all-reduce that times out; the 16-bit wire's cases are in test_sim_wire16.cpp, the op cases in
// test_sim_ops.cpp. Runs with
// DPTRAIN_SIM_CUDA_DEVICES=2 and DPTRAIN_SIM_CUDA_MEMORY=64M (CMakeLists.txt).
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "test_sim_cuda.hpp"

namespace sim_test {

namespace {

int setup(void **) {
  void *library = dlopen(DPT_SIM_MODULE, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    print_error("dlopen(%s): %s\n", DPT_SIM_MODULE, dlerror());
    return -1;
  }
  auto entry = reinterpret_cast<dpt_backend_entry_fn>(dlsym(library, DPT_BACKEND_ENTRY_CUDA));
  api = entry != nullptr ? entry() : nullptr;
  return api != nullptr && api->abi_version == DPT_BACKEND_ABI_VERSION ? 0 : -1;
}

// The simulated devices describe themselves.
void test_discovery(void **) {
  int count = 0;
  OK(api->device_count(&count, error, sizeof error));
  assert_int_equal(count, 2);
  dpt_backend_device_props p;
  OK(api->device_props(1, &p, error, sizeof error));
  assert_string_equal(p.name, "dptrain simulated GPU");
  assert_string_equal(p.pci_bus_id, "0000:01:00.0");
  assert_int_equal(p.compute_capability_major, 9);
  assert_int_equal(p.compute_capability_minor, 0);
  assert_int_equal(p.multiprocessor_count, 132);
  assert_int_equal(p.total_memory, uint64_t(64) << 20);
  int can = -1;
  OK(api->can_access_peer(0, 1, &can, error, sizeof error));
  assert_int_equal(can, 1);
  OK(api->can_access_peer(1, 1, &can, error, sizeof error));
  assert_int_equal(can, 0);
  EXPECT_ERROR(DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:2", api->device_props(2, &p, error, sizeof error));
  dpt_backend_versions v;
  api->versions(&v);
  assert_int_equal(v.runtime_version, 13000);
  assert_int_equal(v.driver_version, 13000);
  assert_non_null(std::strstr(v.text, "simulated CUDA backend (tests/sim_cuda), no GPU"));
  // The test hooks are an extension: found by name, NULL for any other.
  const dpt_backend_test_v1 *ext = test_extension();
  assert_int_equal(ext->struct_size, sizeof(dpt_backend_test_v1));
  assert_null(api->get_extension("dptrain.test.v0"));
  assert_null(api->get_extension(nullptr));
  OK(ext->self_test(0, error, sizeof error));
  OK(ext->self_test(1, error, sizeof error));
  EXPECT_ERROR(DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:2", ext->self_test(2, error, sizeof error));
  // NCCL across processes: an id names a shared-memory board (a new one each time); an id it did not make
  // is refused before anything is created.
  char id[DPT_BACKEND_NCCL_ID_BYTES], other[DPT_BACKEND_NCCL_ID_BYTES];
  OK(api->nccl_unique_id(id, error, sizeof error));
  OK(api->nccl_unique_id(other, error, sizeof error));
  assert_int_equal(id[0], '/');
  assert_int_not_equal(std::memcmp(id, other, sizeof id), 0);
  char junk[DPT_BACKEND_NCCL_ID_BYTES] = "not an id";
  const int zero = 0;
  dpt_backend_comm *comm = nullptr;
  EXPECT_ERROR(DPT_BACKEND_ERROR_INVALID_ARGUMENT, "not an id of nccl_unique_id",
               api->comm_create_multi(junk, 1, 0, 1, &zero, &comm, error, sizeof error));
  EXPECT_ERROR(DPT_BACKEND_ERROR_INVALID_ARGUMENT, "ranks 1 .. 1 of 1",
               api->comm_create_multi(id, 1, 1, 1, &zero, &comm, error, sizeof error));
  // One process, one rank: the board is made and joined at once, and the all-reduce of one rank is a copy.
  OK(api->comm_create_multi(id, 1, 0, 1, &zero, &comm, error, sizeof error));
  dpt_backend_context *ctx = context(0);
  float *d = alloc_floats(ctx, 3);
  const std::vector<float> values = {1.5f, -2.0f, 3.25f};
  OK(api->copy_to_device(ctx, d, values.data(), 3 * sizeof(float), error, sizeof error));
  const size_t floats = 3;
  OK(api->comm_all_reduce(comm, &ctx, 1, &d, &floats, DPT_DTYPE_F32, 10.0, error, sizeof error));
  std::vector<float> back(3);
  OK(api->copy_to_host(ctx, back.data(), d, 3 * sizeof(float), error, sizeof error));
  OK(api->context_synchronize(ctx, error, sizeof error));
  assert_true(back == values);
  api->comm_destroy(comm);
}

// Copies and kernels run at synchronize: the host source is read then, the host destination written then.
void test_results_after_synchronize(void **) {
  dpt_backend_context *ctx = context(0);
  float *d = alloc_floats(ctx, 3);
  std::vector<float> source = {1.0f, 2.0f, 3.0f};
  OK(api->copy_to_device(ctx, d, source.data(), 3 * sizeof(float), error, sizeof error));
  source = {4.0f, 5.0f, 6.0f};  // before the copy ran: the copy reads these
  OK(api->scale(ctx, d, 3, 2.0f, error, sizeof error));
  std::vector<float> host(3, -1.0f);
  OK(api->copy_to_host(ctx, host.data(), d, 3 * sizeof(float), error, sizeof error));
  assert_true(host[0] == -1.0f && host[1] == -1.0f && host[2] == -1.0f);  // nothing has run yet
  OK(api->context_synchronize(ctx, error, sizeof error));
  assert_true(host[0] == 8.0f && host[1] == 10.0f && host[2] == 12.0f);  // in stream order
  // mem_free waits for the stream too.
  float *e = alloc_floats(ctx, 1);
  const float one = 1.0f;
  OK(api->copy_to_device(ctx, e, &one, sizeof one, error, sizeof error));
  OK(api->copy_to_host(ctx, host.data(), e, sizeof one, error, sizeof error));
  OK(api->mem_free(ctx, e, error, sizeof error));
  assert_true(host[0] == 1.0f);
  api->context_destroy(ctx);
}

// A copy queued ahead takes its source where the work before it leaves it, holds 0xFF bytes (NaN) in its
// destination until the join (what a read of it before the join gets: on a GPU anything), and writes its
// values at the join; a source or destination written between the copy and the join is a race the join
// reports when it runs (at the next synchronize), after which the context goes on working.
void test_copies_ahead(void **) {
  dpt_backend_context *ctx = context(0);
  dpt_backend_context *peer = context(1);
  const std::vector<float> values = {1.5f, -2.0f, 3.25f, 4.0f};
  const size_t bytes = values.size() * sizeof(float);
  float *source = alloc_floats(peer, values.size());  // on cuda:1: a peer copy
  OK(api->copy_to_device(peer, source, values.data(), bytes, error, sizeof error));
  OK(api->context_synchronize(peer, error, sizeof error));
  float *dst = alloc_floats(ctx, values.size());
  float *early = alloc_floats(ctx, values.size());
  float *late = alloc_floats(ctx, values.size());
  OK(api->copy_device_ahead(ctx, dst, source, bytes, error, sizeof error));
  OK(api->copy_device(ctx, early, dst, bytes, error, sizeof error));  // a read before the join
  OK(api->copy_join_ahead(ctx, error, sizeof error));
  OK(api->copy_device(ctx, late, dst, bytes, error, sizeof error));
  for (const float v : download(ctx, early, values.size())) assert_true(std::isnan(v));
  const std::vector<float> got = download(ctx, late, values.size());
  assert_memory_equal(got.data(), values.data(), bytes);
  // The source written before the join (by its own GPU's work).
  const std::vector<float> zeros(values.size(), 0.0f);
  OK(api->copy_device_ahead(ctx, dst, source, bytes, error, sizeof error));
  OK(api->copy_to_device(peer, source, zeros.data(), bytes, error, sizeof error));
  OK(api->context_synchronize(peer, error, sizeof error));
  OK(api->copy_join_ahead(ctx, error, sizeof error));
  EXPECT_ERROR(DPT_BACKEND_ERROR, "the source", api->context_synchronize(ctx, error, sizeof error));
  assert_non_null(std::strstr(error, "written before the join"));
  // The destination written before the join.
  OK(api->copy_device_ahead(ctx, dst, source, bytes, error, sizeof error));
  OK(api->mem_set(ctx, dst, 0, bytes, error, sizeof error));
  OK(api->copy_join_ahead(ctx, error, sizeof error));
  EXPECT_ERROR(DPT_BACKEND_ERROR, "the destination", api->context_synchronize(ctx, error, sizeof error));
  // The context goes on working; a join with nothing queued does nothing.
  OK(api->copy_join_ahead(ctx, error, sizeof error));
  OK(api->copy_device_ahead(ctx, dst, source, bytes, error, sizeof error));
  OK(api->copy_join_ahead(ctx, error, sizeof error));
  assert_memory_equal(download(ctx, dst, values.size()).data(), zeros.data(), bytes);
  api->context_destroy(ctx);
  api->context_destroy(peer);
}

// New device memory holds NaNs (garbage on a GPU), not zeros.
void test_fresh_memory_is_nan(void **) {
  dpt_backend_context *ctx = context(1);
  const float *d = alloc_floats(ctx, 1000);
  for (const float v : download(ctx, d, 1000)) assert_true(std::isnan(v));
  api->context_destroy(ctx);
}

// A device pointer read on the host crashes (the caller's view is PROT_NONE).
void test_device_pointer_not_host_readable(void **) {
  dpt_backend_context *ctx = context(0);
  float *d = alloc_floats(ctx, 4);
  const pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    std::signal(SIGSEGV, SIG_DFL);  // not CMocka's (or a sanitizer's) handler: die of it
    const volatile float *p = d;
    const float v = *p;
    _exit(v == v ? 0 : 0);  // reached only when the read did not fault
  }
  int status = 0;
  assert_int_equal(waitpid(child, &status, 0), child);
  print_message("reading a device pointer on the host: %s %d\n", WIFSIGNALED(status) ? "signal" : "exit",
                WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
  api->context_destroy(ctx);
}

// Buffer arguments are checked at the call: device memory of the context's device, inside one live
// allocation; a buffer freed by another context before queued work ran fails that work at synchronize.
void test_pointer_checks(void **) {
  dpt_backend_context *a = context(0), *b = context(0), *other = context(1);
  float *d = alloc_floats(a, 8);
  float *remote = alloc_floats(other, 8);
  float host[8] = {};
  const int kInvalid = DPT_BACKEND_ERROR_INVALID_ARGUMENT;
  EXPECT_ERROR(kInvalid, "not device memory", api->scale(a, host, 8, 2.0f, error, sizeof error));
  EXPECT_ERROR(kInvalid, "runs past the end", api->scale(a, d, 9, 2.0f, error, sizeof error));
  EXPECT_ERROR(kInvalid, "runs past the end", api->scale(a, d + 4, 5, 2.0f, error, sizeof error));
  EXPECT_ERROR(kInvalid, "memory of cuda:1", api->scale(a, remote, 8, 2.0f, error, sizeof error));
  EXPECT_ERROR(kInvalid, "is device memory",
               api->copy_to_host(a, remote, d, 8 * sizeof(float), error, sizeof error));
  EXPECT_ERROR(kInvalid, "not aligned",
               api->scale(a, reinterpret_cast<float *>(reinterpret_cast<char *>(d) + 2), 1, 2.0f, error,
                          sizeof error));
  EXPECT_ERROR(kInvalid, "not allocated by this context", api->mem_free(b, d, error, sizeof error));
  // A peer copy from another device is allowed; a device-to-device copy reads and writes at synchronize.
  const std::vector<float> values = {1, 2, 3, 4, 5, 6, 7, 8};
  OK(api->copy_to_device(other, remote, values.data(), 8 * sizeof(float), error, sizeof error));
  OK(api->context_synchronize(other, error, sizeof error));
  OK(api->copy_device(a, d, remote, 8 * sizeof(float), error, sizeof error));
  assert_memory_equal(download(a, d, 8).data(), values.data(), 8 * sizeof(float));
  // Use after free across contexts: a queues work on b's buffer, b frees it, a's work fails when it runs.
  float *shared = alloc_floats(b, 8);
  OK(api->scale(a, shared, 8, 2.0f, error, sizeof error));
  OK(api->mem_free(b, shared, error, sizeof error));
  EXPECT_ERROR(DPT_BACKEND_ERROR, "use after free", api->context_synchronize(a, error, sizeof error));
  OK(api->context_synchronize(a, error, sizeof error));  // reported once
  EXPECT_ERROR(kInvalid, "not in a live allocation", api->scale(a, shared, 8, 2.0f, error, sizeof error));
  // A destroyed context is refused, not used.
  api->context_destroy(b);
  EXPECT_ERROR(kInvalid, "not a live context", api->context_synchronize(b, error, sizeof error));
  api->context_destroy(other);
  api->context_destroy(a);
}

// Out of memory names the device and the call; the context goes on; freed memory is reused.
void test_out_of_memory(void **) {
  dpt_backend_context *ctx = context(1);
  void *p = &p;
  EXPECT_ERROR(DPT_BACKEND_ERROR_OUT_OF_MEMORY, "cuda:1: cudaMalloc(68157440 bytes): error 2",
               api->mem_alloc(ctx, size_t(65) << 20, &p, error, sizeof error));
  assert_null(p);
  uint64_t in_use = 1;
  OK(api->mem_in_use(ctx, &in_use, error, sizeof error));
  assert_int_equal(in_use, 0);
  dpt_backend_device_props props;
  OK(api->device_props(1, &props, error, sizeof error));
  const uint64_t free_before = props.free_memory;
  void *big = nullptr;
  OK(api->mem_alloc(ctx, size_t(40) << 20, &big, error, sizeof error));
  OK(api->device_props(1, &props, error, sizeof error));
  assert_int_equal(props.free_memory, free_before - (uint64_t(40) << 20));
  EXPECT_ERROR(DPT_BACKEND_ERROR_OUT_OF_MEMORY, "out of memory",
               api->mem_alloc(ctx, size_t(40) << 20, &p, error, sizeof error));
  OK(api->mem_free(ctx, big, error, sizeof error));
  OK(api->mem_alloc(ctx, size_t(40) << 20, &big, error, sizeof error));
  OK(api->mem_in_use(ctx, &in_use, error, sizeof error));
  assert_int_equal(in_use, uint64_t(40) << 20);
  api->context_destroy(ctx);  // frees it
  OK(api->device_props(1, &props, error, sizeof error));
  assert_int_equal(props.free_memory, free_before);
}

// DPTRAIN_SIM_CUDA_FAIL: a member fails on one device, from its (N+1)-th call, now or when the queue runs.
void test_fault_injection(void **) {
  dpt_backend_context *c0 = context(0), *c1 = context(1);
  float *d0 = alloc_floats(c0, 4), *d1 = alloc_floats(c1, 4);
  const std::vector<float> values = {1, 2, 3, 4};
  OK(api->copy_to_device(c0, d0, values.data(), 4 * sizeof(float), error, sizeof error));
  OK(api->copy_to_device(c1, d1, values.data(), 4 * sizeof(float), error, sizeof error));
  // An op call's member is op_forward or op_backward; an entry of the member fails every op, an entry of
  // "op_forward(<op>)" that op only.
  float *x0 = alloc_floats(c0, 8), *x1 = alloc_floats(c1, 8);
  OK(api->copy_to_device(c0, x0, values.data(), 4 * sizeof(float), error, sizeof error));
  OK(api->copy_to_device(c0, x0 + 4, values.data(), 4 * sizeof(float), error, sizeof error));
  OK(api->copy_to_device(c1, x1, values.data(), 4 * sizeof(float), error, sizeof error));
  OK(api->copy_to_device(c1, x1 + 4, values.data(), 4 * sizeof(float), error, sizeof error));
  const dpt_op_call dense0 = dense_call(1, 2, 2, x0, x0 + 2, x0 + 6);
  const dpt_op_call dense1 = dense_call(1, 2, 2, x1, x1 + 2, x1 + 6);
  setenv("DPTRAIN_SIM_CUDA_FAIL", "op_forward@1", 1);
  EXPECT_ERROR(DPT_BACKEND_ERROR, "cuda:1: op_forward(dense): simulated failure (DPTRAIN_SIM_CUDA_FAIL)",
               api->op_forward(c1, &dense1, error, sizeof error));
  OK(api->op_forward(c0, &dense0, error, sizeof error));
  dpt_op_call relu0{};
  relu0.op = "relu";
  relu0.n = 1;
  relu0.input_count = 1;
  relu0.inputs[0] = tensor(x0, {4});
  relu0.output = tensor(x0 + 4, {4});
  relu0.output_grad = x0;
  setenv("DPTRAIN_SIM_CUDA_FAIL", "op_backward(relu)@0", 1);
  OK(api->op_forward(c0, &relu0, error, sizeof error));
  EXPECT_ERROR(DPT_BACKEND_ERROR, "cuda:0: op_backward(relu): simulated failure",
               api->op_backward(c0, &relu0, error, sizeof error));
  dpt_op_call dense1_backward = dense1;
  dense1_backward.output_grad = x1 + 6;
  OK(api->op_backward(c1, &dense1_backward, error, sizeof error));
  setenv("DPTRAIN_SIM_CUDA_FAIL", "op_forward(dense)@1:async", 1);
  OK(api->op_forward(c1, &dense1, error, sizeof error));
  unsetenv("DPTRAIN_SIM_CUDA_FAIL");
  EXPECT_ERROR(DPT_BACKEND_ERROR, "cuda:1: op_forward(dense): simulated asynchronous failure",
               api->context_synchronize(c1, error, sizeof error));
  OK(api->context_synchronize(c0, error, sizeof error));
  setenv("DPTRAIN_SIM_CUDA_FAIL", "scale@0#2", 1);
  OK(api->scale(c0, d0, 4, 1.0f, error, sizeof error));
  OK(api->scale(c0, d0, 4, 1.0f, error, sizeof error));
  EXPECT_ERROR(DPT_BACKEND_ERROR, "cuda:0: scale: simulated failure",
               api->scale(c0, d0, 4, 1.0f, error, sizeof error));
  EXPECT_ERROR(DPT_BACKEND_ERROR, "cuda:0: scale: simulated failure",
               api->scale(c0, d0, 4, 1.0f, error, sizeof error));
  OK(api->scale(c1, d1, 4, 1.0f, error, sizeof error));
  // Asynchronous: the call succeeds, the next synchronize reports it, and the work queued after it is
  // skipped.
  setenv("DPTRAIN_SIM_CUDA_FAIL", "scale@1:async", 1);
  OK(api->scale(c1, d1, 4, 10.0f, error, sizeof error));
  unsetenv("DPTRAIN_SIM_CUDA_FAIL");
  float host[4] = {-1, -1, -1, -1};
  OK(api->copy_to_host(c1, host, d1, sizeof host, error, sizeof error));
  EXPECT_ERROR(DPT_BACKEND_ERROR, "cuda:1: scale: simulated asynchronous failure",
               api->context_synchronize(c1, error, sizeof error));
  assert_true(host[0] == -1.0f);
  OK(api->context_synchronize(c1, error, sizeof error));
  assert_memory_equal(download(c1, d1, 4).data(), values.data(), sizeof host);  // the scale by 10 never ran
  setenv("DPTRAIN_SIM_CUDA_FAIL", "context_create@*", 1);
  dpt_backend_context *none = nullptr;
  EXPECT_ERROR(DPT_BACKEND_ERROR, "cuda:1: context_create: simulated failure",
               api->context_create(1, nullptr, &none, error, sizeof error));
  assert_null(none);
  unsetenv("DPTRAIN_SIM_CUDA_FAIL");
  api->context_destroy(c0);
  api->context_destroy(c1);
}

// The virtual all-reduce runs after the work queued on every replica and sums in replica order: with
// 1, 1e8, -1e8 the float sum in order 0, 1, 2 is 0 (1 + 1e8 rounds to 1e8), in reverse order 1.
void test_virtual_all_reduce_order(void **) {
  dpt_backend_context *contexts[3] = {context(0), context(0), context(0)};
  float *buffers[3];
  const float values[3] = {1.0f, 1e8f, -1e8f};
  for (int r = 0; r < 3; ++r) {
    buffers[r] = alloc_floats(contexts[r], 5);
    const std::vector<float> v(5, r < 2 ? values[r] : 0.0f);
    OK(api->copy_to_device(contexts[r], buffers[r], v.data(), 5 * sizeof(float), error, sizeof error));
    OK(api->context_synchronize(contexts[r], error, sizeof error));
  }
  // Queued, not run: the all-reduce must run this copy first (else the sum would be 1e8).
  const std::vector<float> last(5, values[2]);
  OK(api->copy_to_device(contexts[2], buffers[2], last.data(), 5 * sizeof(float), error, sizeof error));
  OK(api->virtual_all_reduce(contexts, 3, buffers, 5, DPT_DTYPE_F32, error, sizeof error));
  for (int r = 0; r < 3; ++r)
    for (const float v : download(contexts[r], buffers[r], 5)) assert_true(v == 0.0f);
  float *overlapping[2] = {buffers[0], buffers[0] + 1};
  EXPECT_ERROR(DPT_BACKEND_ERROR_INVALID_ARGUMENT, "overlap",
               api->virtual_all_reduce(contexts, 2, overlapping, 4, DPT_DTYPE_F32, error, sizeof error));
  for (dpt_backend_context *c : contexts) api->context_destroy(c);
}

// A rank left out by comm_inject_hang: the all-reduce waits out its timeout, fails as an aborted NCCL
// communicator, and the communicator refuses further work.
void test_hang_times_out(void **) {
  dpt_backend_context *contexts[2] = {context(0), context(1)};
  float *buffers[2] = {alloc_floats(contexts[0], 4), alloc_floats(contexts[1], 4)};
  const std::vector<float> values = {1, 2, 3, 4};
  for (int r = 0; r < 2; ++r)
    OK(api->copy_to_device(contexts[r], buffers[r], values.data(), 4 * sizeof(float), error, sizeof error));
  const int ordinals[2] = {0, 1};
  dpt_backend_comm *comm = nullptr;
  OK(api->comm_create(2, ordinals, &comm, error, sizeof error));
  const size_t counts[1] = {4};
  OK(api->comm_all_reduce(comm, contexts, 1, buffers, counts, DPT_DTYPE_F32, 10.0, error, sizeof error));
  const std::vector<float> sums = {2, 4, 6, 8};
  assert_memory_equal(download(contexts[1], buffers[1], 4).data(), sums.data(), 4 * sizeof(float));
  OK(test_extension()->comm_inject_hang(comm, 1, error, sizeof error));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_ERROR(
      DPT_BACKEND_ERROR_COMMUNICATION,
      "cuda:0,1: ncclAllReduce did not finish within 0.3 s (not finished: cuda:1): ncclCommAbort called, "
      "the communicator is unusable",
      api->comm_all_reduce(comm, contexts, 1, buffers, counts, DPT_DTYPE_F32, 0.3, error, sizeof error));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  assert_true(seconds >= 0.3 && seconds < 10.0);
  for (const float v : download(contexts[0], buffers[0], 4)) assert_true(std::isnan(v));  // undefined: NaN
  EXPECT_ERROR(
      DPT_BACKEND_ERROR_COMMUNICATION, "aborted",
      api->comm_all_reduce(comm, contexts, 1, buffers, counts, DPT_DTYPE_F32, 0.3, error, sizeof error));
  api->comm_destroy(comm);
  // An injected all-reduce failure is a communication error too.
  OK(api->comm_create(2, ordinals, &comm, error, sizeof error));
  setenv("DPTRAIN_SIM_CUDA_FAIL", "comm_all_reduce@1", 1);
  EXPECT_ERROR(
      DPT_BACKEND_ERROR_COMMUNICATION, "simulated failure on cuda:1",
      api->comm_all_reduce(comm, contexts, 1, buffers, counts, DPT_DTYPE_F32, 0.3, error, sizeof error));
  unsetenv("DPTRAIN_SIM_CUDA_FAIL");
  api->comm_destroy(comm);
  for (dpt_backend_context *c : contexts) api->context_destroy(c);
}

// Distinct contexts are independent: threads allocating, computing and freeing on contexts of one device and
// of another at once, while a third thread queries the devices (the shared allocator and registries are
// locked; TSan runs this test too).
void test_threads(void **) {
  std::vector<std::thread> threads;
  bool ok[3] = {false, false, false};
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([t, &ok] {
      char e[512] = "";
      dpt_backend_context *ctx = nullptr;
      if (api->context_create(t == 2 ? 1 : 0, nullptr, &ctx, e, sizeof e) != 0) return;
      bool good = true;
      for (int i = 0; i < 200 && good; ++i) {
        void *p = nullptr;
        const float v[4] = {1.0f, 2.0f, 3.0f, float(i)};
        float back[4] = {};
        good = api->mem_alloc(ctx, sizeof v, &p, e, sizeof e) == 0 &&
               api->copy_to_device(ctx, p, v, sizeof v, e, sizeof e) == 0 &&
               api->scale(ctx, static_cast<float *>(p), 4, 2.0f, e, sizeof e) == 0 &&
               api->copy_to_host(ctx, back, p, sizeof back, e, sizeof e) == 0 &&
               api->context_synchronize(ctx, e, sizeof e) == 0 && back[3] == 2.0f * float(i) &&
               api->mem_free(ctx, p, e, sizeof e) == 0;
        dpt_backend_device_props props;
        good = good && api->device_props(t % 2, &props, e, sizeof e) == 0;
      }
      api->context_destroy(ctx);
      ok[t] = good;
    });
  for (std::thread &t : threads) t.join();
  assert_true(ok[0] && ok[1] && ok[2]);
}

}  // namespace

}  // namespace sim_test

int main() {
  using namespace sim_test;
  const CMUnitTest tests[] = {
      cmocka_unit_test(test_discovery),
      cmocka_unit_test(test_results_after_synchronize),
      cmocka_unit_test(test_copies_ahead),
      cmocka_unit_test(test_fresh_memory_is_nan),
      cmocka_unit_test(test_device_pointer_not_host_readable),
      cmocka_unit_test(test_pointer_checks),
      cmocka_unit_test(test_out_of_memory),
      cmocka_unit_test(test_fault_injection),
      cmocka_unit_test(test_virtual_all_reduce_order),
      cmocka_unit_test(test_hang_times_out),
      cmocka_unit_test(test_wire16_known_values),
      cmocka_unit_test(test_wire16_matches_rule),
      cmocka_unit_test(test_wire16_virtual),
      cmocka_unit_test(test_wire16_refusals_and_hang),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_ops_match_cpu_reference),
      cmocka_unit_test(test_op_supported),
      cmocka_unit_test(test_op_checks),
      cmocka_unit_test(test_accumulate_and_loss),
  };
  return cmocka_run_group_tests(tests, setup, nullptr);
}
