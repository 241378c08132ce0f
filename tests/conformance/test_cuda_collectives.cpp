// The CUDA module's collectives: the NCCL all-reduce over every GPU present (one GPU: a single rank), its
// timeout (a rank that never joins: the communicator is aborted and a communication error returned, never a
// hang), and the device-memory all-reduce of K replicas on one GPU (virtual devices, K = 2 and 3).
//
// Tolerance: exact. The data are small integers, whose sums are exact in FP32 in any order, so every rank
// must hold exactly the integer sum (and the replicas the same bits).
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_harness.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
extern "C" {
#include <cmocka.h>
}

namespace {

using cuda_test::check;
using cuda_test::expect_bitwise;
using cuda_test::integers;

const size_t kCounts[] = {1, 4099, (size_t(1) << 20) + 5};  // buffers of one grouped all-reduce
constexpr size_t kBuffers = sizeof kCounts / sizeof kCounts[0];

// One context per rank, created on the given GPUs and destroyed at the end.
struct Ranks {
  const dpt_backend_v2 &api;
  std::vector<dpt_backend_context *> contexts;
  char error[512] = "";

  Ranks(const dpt_backend_v2 &a, const std::vector<int> &ordinals) : api(a) {
    for (const int ordinal : ordinals) {
      dpt_backend_context *ctx = nullptr;
      check(api.context_create(ordinal, nullptr, &ctx, error, sizeof error), "context_create", error);
      contexts.push_back(ctx);
    }
  }
  ~Ranks() {
    for (dpt_backend_context *ctx : contexts) api.context_destroy(ctx);
  }
  float *upload(size_t rank, const std::vector<float> &host) {
    void *p = nullptr;
    check(api.mem_alloc(contexts[rank], host.size() * sizeof(float), &p, error, sizeof error), "mem_alloc",
          error);
    check(
        api.copy_to_device(contexts[rank], p, host.data(), host.size() * sizeof(float), error, sizeof error),
        "copy_to_device", error);
    check(api.context_synchronize(contexts[rank], error, sizeof error), "context_synchronize", error);
    return static_cast<float *>(p);
  }
  std::vector<float> download(size_t rank, const float *device, size_t count) {
    std::vector<float> host(count);
    check(api.context_synchronize(contexts[rank], error, sizeof error), "context_synchronize", error);
    check(api.copy_to_host(contexts[rank], host.data(), device, count * sizeof(float), error, sizeof error),
          "copy_to_host", error);
    check(api.context_synchronize(contexts[rank], error, sizeof error), "context_synchronize", error);
    return host;
  }
};

// Fills buffers[rank * kBuffers + b] with integers and returns the exact sums per buffer.
std::vector<std::vector<float>> fill(Ranks &ranks, std::vector<float *> &buffers, uint64_t seed) {
  const size_t n = ranks.contexts.size();
  std::vector<std::vector<float>> sums(kBuffers);
  buffers.assign(n * kBuffers, nullptr);
  for (size_t b = 0; b < kBuffers; ++b) {
    sums[b].assign(kCounts[b], 0.0f);
    for (size_t r = 0; r < n; ++r) {
      const std::vector<float> data = integers(kCounts[b], seed + 100 * r + b, -1000, 1000);
      for (size_t i = 0; i < data.size(); ++i) sums[b][i] += data[i];  // exact: |sum| <= 1000 * ranks
      buffers[r * kBuffers + b] = ranks.upload(r, data);
    }
  }
  return sums;
}

// GPUs 0 .. count-1, one rank each.
std::vector<int> first_gpus(int count) {
  std::vector<int> ordinals;
  for (int i = 0; i < count; ++i) ordinals.push_back(i);
  return ordinals;
}

// A NCCL communicator with one rank per GPU of ordinals.
dpt_backend_comm *comm_over(const dpt_backend_v2 &api, Ranks &ranks, const std::vector<int> &ordinals) {
  dpt_backend_comm *comm = nullptr;
  check(api.comm_create(int(ordinals.size()), ordinals.data(), &comm, ranks.error, sizeof ranks.error),
        "comm_create", ranks.error);
  return comm;
}

// GPU: a grouped all-reduce of three buffers over every GPU; every rank holds the exact sums.
void test_gpu_nccl_all_reduce(void **) {
  const dpt_backend_v2 &api = cuda_test::module_or_skip();
  const int count = cuda_test::gpu_count_or_skip(api);
  const std::vector<int> ordinals = first_gpus(count);
  Ranks ranks(api, ordinals);
  dpt_backend_comm *comm = comm_over(api, ranks, ordinals);
  std::vector<float *> buffers;
  const std::vector<std::vector<float>> sums = fill(ranks, buffers, 1200);
  for (int round = 0; round < 2; ++round) {  // the second reuses the connections of the first
    const int rc = api.comm_all_reduce(comm, ranks.contexts.data(), kBuffers, buffers.data(), kCounts, 60.0,
                                       ranks.error, sizeof ranks.error);
    check(rc, "comm_all_reduce", ranks.error);
    if (round == 1) break;
    for (size_t r = 0; r < size_t(count); ++r)
      for (size_t b = 0; b < kBuffers; ++b)
        expect_bitwise(("rank " + std::to_string(r) + ", buffer of " + std::to_string(kCounts[b])).c_str(),
                       ranks.download(r, buffers[r * kBuffers + b], kCounts[b]), sums[b]);
    // Put the inputs back (rank 0 holds the sums, the others zeros) for the second round.
    for (size_t r = 1; r < size_t(count); ++r)
      for (size_t b = 0; b < kBuffers; ++b)
        check(api.mem_set(ranks.contexts[r], buffers[r * kBuffers + b], 0, kCounts[b] * sizeof(float),
                          ranks.error, sizeof ranks.error),
              "mem_set", ranks.error);
  }
  for (size_t r = 0; r < size_t(count); ++r)
    expect_bitwise(("round 2, rank " + std::to_string(r)).c_str(),
                   ranks.download(r, buffers[r * kBuffers + 2], kCounts[2]), sums[2]);
  api.comm_destroy(comm);
}

// GPU: a rank that never joins. The all-reduce ends after its timeout with a communication error naming
// the abort, the communicator refuses further work, and the contexts go on working. With one GPU the only
// rank is left out (nothing runs, the wait times out); with several, the last one is, after a first round
// that set up NCCL's connections, so the other ranks' kernels really wait for a peer until the abort.
void test_gpu_nccl_timeout(void **) {
  const dpt_backend_v2 &api = cuda_test::module_or_skip();
  const int count = cuda_test::gpu_count_or_skip(api);
  const std::vector<int> ordinals = first_gpus(count);
  Ranks ranks(api, ordinals);
  dpt_backend_comm *comm = comm_over(api, ranks, ordinals);
  std::vector<float *> buffers;
  fill(ranks, buffers, 1300);
  if (count > 1)
    check(api.comm_all_reduce(comm, ranks.contexts.data(), kBuffers, buffers.data(), kCounts, 60.0,
                              ranks.error, sizeof ranks.error),
          "comm_all_reduce (first round)", ranks.error);
  check(cuda_test::test_extension(api).comm_inject_hang(comm, count - 1, ranks.error, sizeof ranks.error),
        "comm_inject_hang", ranks.error);
  const auto start = std::chrono::steady_clock::now();
  const int rc = api.comm_all_reduce(comm, ranks.contexts.data(), kBuffers, buffers.data(), kCounts, 2.0,
                                     ranks.error, sizeof ranks.error);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  print_message("all-reduce with a missing rank: %d after %.2f s: %s\n", rc, seconds, ranks.error);
  assert_int_equal(rc, DPT_BACKEND_ERROR_COMMUNICATION);
  assert_non_null(std::strstr(ranks.error, "ncclCommAbort"));
  assert_non_null(std::strstr(ranks.error, "cuda:"));
  assert_true(seconds >= 2.0 && seconds < 30.0);
  assert_int_equal(api.comm_all_reduce(comm, ranks.contexts.data(), kBuffers, buffers.data(), kCounts, 2.0,
                                       ranks.error, sizeof ranks.error),
                   DPT_BACKEND_ERROR_COMMUNICATION);
  print_message("after the abort: %s\n", ranks.error);
  api.comm_destroy(comm);
  // The streams are free again: a copy on every context completes.
  for (size_t r = 0; r < size_t(count); ++r) {
    const std::vector<float> host = {1.0f, 2.0f};
    expect_bitwise(("a copy on rank " + std::to_string(r) + " after the abort").c_str(),
                   ranks.download(r, ranks.upload(r, host), host.size()), host);
  }
}

// GPU: the contexts' all-reduce of K replicas on GPU 0, each replica with its own context (stream), and
// with one context shared by all replicas.
void check_virtual(const dpt_backend_v2 &api, int replicas, bool shared_context, size_t count,
                   uint64_t seed) {
  print_message("virtual all-reduce: %d replicas of %zu floats on cuda:0%s\n", replicas, count,
                shared_context ? ", one context" : "");
  Ranks ranks(api, std::vector<int>(shared_context ? 1 : size_t(replicas), 0));
  std::vector<dpt_backend_context *> contexts(size_t(replicas), ranks.contexts[0]);
  if (!shared_context) contexts = ranks.contexts;
  std::vector<float *> buffers;
  std::vector<float> sum(count, 0.0f);
  for (int r = 0; r < replicas; ++r) {
    const std::vector<float> data = integers(count, seed + uint64_t(r), -1000, 1000);
    for (size_t i = 0; i < count; ++i) sum[i] += data[i];
    buffers.push_back(ranks.upload(shared_context ? 0 : size_t(r), data));
  }
  check(api.virtual_all_reduce(contexts.data(), replicas, buffers.data(), count, ranks.error,
                               sizeof ranks.error),
        "virtual_all_reduce", ranks.error);
  // Each replica reads its buffer on its own stream: the events order it after the sum.
  for (int r = 0; r < replicas; ++r)
    expect_bitwise(("replica " + std::to_string(r)).c_str(),
                   ranks.download(shared_context ? 0 : size_t(r), buffers[size_t(r)], count), sum);
}

void test_gpu_virtual_all_reduce(void **) {
  const dpt_backend_v2 &api = cuda_test::module_or_skip();
  const int count = cuda_test::gpu_count_or_skip(api);
  check_virtual(api, 2, false, (size_t(1) << 20) + 7, 1400);
  check_virtual(api, 3, false, (size_t(1) << 20) + 7, 1410);
  check_virtual(api, 3, false, 5, 1420);
  check_virtual(api, 2, true, 4099, 1430);
  check_virtual(api, 1, false, 17, 1440);
  // Misuse: a shared buffer, too many replicas, replicas on two GPUs.
  Ranks ranks(api, count > 1 ? std::vector<int>{0, 1} : std::vector<int>{0, 0});
  float *a = ranks.upload(0, std::vector<float>(8, 1.0f));
  float *b = ranks.upload(1, std::vector<float>(8, 1.0f));
  float *same[2] = {a, a};
  assert_int_equal(api.virtual_all_reduce(ranks.contexts.data(), 2, same, 8, ranks.error, sizeof ranks.error),
                   DPT_BACKEND_ERROR_INVALID_ARGUMENT);
  print_message("shared buffer: %s\n", ranks.error);
  std::vector<dpt_backend_context *> many(33, ranks.contexts[0]);
  std::vector<float *> many_buffers(33, a);
  assert_int_equal(
      api.virtual_all_reduce(many.data(), 33, many_buffers.data(), 8, ranks.error, sizeof ranks.error),
      DPT_BACKEND_ERROR_INVALID_ARGUMENT);
  print_message("33 replicas: %s\n", ranks.error);
  if (count > 1) {
    float *two[2] = {a, b};
    assert_int_equal(
        api.virtual_all_reduce(ranks.contexts.data(), 2, two, 8, ranks.error, sizeof ranks.error),
        DPT_BACKEND_ERROR_INVALID_ARGUMENT);
    print_message("two GPUs: %s\n", ranks.error);
  }
}

// GPU: NCCL needs distinct GPUs; a GPU named twice, or one that does not exist, is refused with a reason.
void test_gpu_comm_misuse(void **) {
  const dpt_backend_v2 &api = cuda_test::module_or_skip();
  const int count = cuda_test::gpu_count_or_skip(api);
  char error[512] = "";
  dpt_backend_comm *comm = nullptr;
  const int twice[2] = {0, 0};
  assert_int_equal(api.comm_create(2, twice, &comm, error, sizeof error), DPT_BACKEND_ERROR_INVALID_ARGUMENT);
  assert_non_null(std::strstr(error, "virtual_all_reduce"));
  print_message("cuda:0 twice: %s\n", error);
  const int missing[1] = {count};
  assert_int_equal(api.comm_create(1, missing, &comm, error, sizeof error),
                   DPT_BACKEND_ERROR_INVALID_ARGUMENT);
  print_message("cuda:%d: %s\n", count, error);
  assert_null(comm);
  check(api.comm_create(1, twice, &comm, error, sizeof error), "comm_create({0})", error);
  assert_int_equal(cuda_test::test_extension(api).comm_inject_hang(comm, 1, error, sizeof error),
                   DPT_BACKEND_ERROR_INVALID_ARGUMENT);
  api.comm_destroy(comm);
}

}  // namespace

int main(int argc, char **argv) {
  if (!cuda_test::start(argc, argv)) return 2;
  const CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_nccl_all_reduce),
      cmocka_unit_test(test_gpu_nccl_timeout),
      cmocka_unit_test(test_gpu_virtual_all_reduce),
      cmocka_unit_test(test_gpu_comm_misuse),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
