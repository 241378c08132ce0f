// The CUDA module's collectives: the NCCL all-reduce over every GPU present (one GPU: a single rank), its
// timeout (a rank that never joins: the communicator is aborted and a communication error returned, never a
// hang), and the device-memory all-reduce of K replicas on one GPU (virtual devices, K = 2 and 3); each on
// the float32 wire and on the 16-bit ones (bf16, fp16: backend_interface.h's wire_dtype). Batch statistics'
// float64 all-reduce (comm_all_reduce_f64): exact sums of doubles that float32 cannot hold. All-reduces
// started beside the compute, joined and waited for later (comm_all_reduce_start, comm_join_started,
// comm_wait_started). The collectives of sharded training (the gather of uneven ranges, the reduce to the
// owners' parts, also started) and grouped sends and receives are test_cuda_sharding_collectives.cpp's, in
// this binary (collectives_fixtures.hpp: what both share).
//
// Tolerance: exact. On the float32 wire the data are small integers, whose sums are exact in FP32 in any
// order, so every rank must hold exactly the integer sum (and the replicas the same bits). On a 16-bit wire
// the data are fractions over 40 binades (float16's subnormals and values below them, float32 subnormals for
// bfloat16), and the reference is the wire's rule evaluated on the host: each rank's value rounded by the
// core's to_bf16 / to_f16, float32 additions from +0 in rank order, the sum rounded. Every step of that rule
// is one correctly rounded IEEE operation in a fixed order, which the GPU performs too (__fadd_rn, no flush
// to zero; the conversions restate the core's, float16.cuh), so the result is determined bit for bit.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "collectives_fixtures.hpp"
#include "core/float16.hpp"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
extern "C" {
#include <cmocka.h>
}

namespace collectives_test {

using cuda_test::check;
using cuda_test::expect_bitwise;
using cuda_test::integers;

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
    const int rc = api.comm_all_reduce(comm, ranks.contexts.data(), kBuffers, buffers.data(), kCounts,
                                       DPT_DTYPE_F32, 60.0, ranks.error, sizeof ranks.error);
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

// GPU: all-reduces started beside the compute (comm_all_reduce_start, comm_wait_started) over every GPU:
// buffer 0 alone, then buffers 1 and 2 in one start. Work queued on a context's stream before a start is in
// its sums (buffer 1 tripled first); work queued between a start and the wait on other memory goes on (a
// buffer of its own set); work queued after the wait sees the sums (buffer 0 doubled). Every rank must hold
// the exact integer sums. A wait with nothing started returns at once; a wire type that is none of the
// three is refused, the communicator still usable; a rank left out (comm_inject_hang): the wait ends with a
// communication error after its timeout, and a start is refused afterwards.
void test_gpu_nccl_all_reduce_started(void **) {
  const dpt_backend_v2 &api = cuda_test::module_or_skip();
  const int count = cuda_test::gpu_count_or_skip(api);
  const std::vector<int> ordinals = first_gpus(count);
  Ranks ranks(api, ordinals);
  dpt_backend_comm *comm = comm_over(api, ranks, ordinals);
  char *error = ranks.error;
  const size_t error_size = sizeof ranks.error;
  check(api.comm_wait_started(comm, ranks.contexts.data(), 60.0, error, error_size),
        "comm_wait_started (none)", error);
  std::vector<float *> buffers;
  std::vector<std::vector<float>> sums = fill(ranks, buffers, 1300);
  const size_t other_count = 4096;
  std::vector<float *> others;
  for (size_t r = 0; r < size_t(count); ++r)
    others.push_back(ranks.upload(r, std::vector<float>(other_count)));
  for (float &v : sums[1]) v *= 3.0f;  // (exact: small integers)
  for (size_t r = 0; r < size_t(count); ++r)
    check(api.scale(ranks.contexts[r], buffers[r * kBuffers + 1], kCounts[1], 3.0f, error, error_size),
          "scale", error);
  const size_t k = size_t(count);
  std::vector<float *> first(k), rest(2 * k);
  for (size_t r = 0; r < size_t(count); ++r) {
    first[r] = buffers[r * kBuffers];
    rest[2 * r] = buffers[r * kBuffers + 1];
    rest[2 * r + 1] = buffers[r * kBuffers + 2];
  }
  assert_int_equal(
      api.comm_all_reduce_start(comm, ranks.contexts.data(), 1, first.data(), kCounts, 99, error, error_size),
      DPT_BACKEND_ERROR_INVALID_ARGUMENT);
  print_message("wire type 99: %s\n", error);
  check(api.comm_all_reduce_start(comm, ranks.contexts.data(), 1, first.data(), kCounts, DPT_DTYPE_F32, error,
                                  error_size),
        "comm_all_reduce_start (buffer 0)", error);
  for (size_t r = 0; r < size_t(count); ++r)
    check(api.mem_set(ranks.contexts[r], others[r], 0x3f, other_count * sizeof(float), error, error_size),
          "mem_set", error);
  check(api.comm_all_reduce_start(comm, ranks.contexts.data(), 2, rest.data(), kCounts + 1, DPT_DTYPE_F32,
                                  error, error_size),
        "comm_all_reduce_start (buffers 1 and 2)", error);
  check(api.comm_wait_started(comm, ranks.contexts.data(), 60.0, error, error_size), "comm_wait_started",
        error);
  for (float &v : sums[0]) v *= 2.0f;
  for (size_t r = 0; r < size_t(count); ++r)
    check(api.scale(ranks.contexts[r], buffers[r * kBuffers], kCounts[0], 2.0f, error, error_size), "scale",
          error);
  for (size_t r = 0; r < size_t(count); ++r) {
    for (size_t b = 0; b < kBuffers; ++b)
      expect_bitwise(
          ("started, rank " + std::to_string(r) + ", buffer of " + std::to_string(kCounts[b])).c_str(),
          ranks.download(r, buffers[r * kBuffers + b], kCounts[b]), sums[b]);
    std::vector<float> set(other_count);
    const uint32_t bits = 0x3f3f3f3fu;
    std::memcpy(&set[0], &bits, sizeof bits);
    std::fill(set.begin(), set.end(), set[0]);
    expect_bitwise("the work between start and wait", ranks.download(r, others[r], other_count), set);
  }
  check(cuda_test::test_extension(api).comm_inject_hang(comm, count - 1, error, error_size),
        "comm_inject_hang", error);
  check(api.comm_all_reduce_start(comm, ranks.contexts.data(), 1, first.data(), kCounts, DPT_DTYPE_F32, error,
                                  error_size),
        "comm_all_reduce_start (a rank left out)", error);
  const auto start = std::chrono::steady_clock::now();
  const int rc = api.comm_wait_started(comm, ranks.contexts.data(), 2.0, error, error_size);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  print_message("started all-reduce with a missing rank: %d after %.2f s: %s\n", rc, seconds, error);
  assert_int_equal(rc, DPT_BACKEND_ERROR_COMMUNICATION);
  assert_non_null(std::strstr(error, "ncclCommAbort"));
  assert_true(seconds >= 2.0 && seconds < 30.0);
  assert_int_equal(api.comm_all_reduce_start(comm, ranks.contexts.data(), 1, first.data(), kCounts,
                                             DPT_DTYPE_F32, error, error_size),
                   DPT_BACKEND_ERROR_COMMUNICATION);
  api.comm_destroy(comm);
}

// GPU: batch statistics' all-reduce of doubles (comm_all_reduce_f64) over every GPU, twice (the second
// round reuses the connections). The values are multiples of 2^-10 below 2^39 in magnitude (their sums over
// up to 8 ranks need at most 51 bits), so that every sum is exact in float64 in any order, and float32 holds
// almost none of them: every rank must hold the
// exact sums, the same bits. Then a rank left out (comm_inject_hang): a communication error after the
// timeout, refused afterwards; and a NULL buffer: refused, the communicator still usable.
void test_gpu_nccl_all_reduce_f64(void **) {
  const dpt_backend_v2 &api = cuda_test::module_or_skip();
  const int count = cuda_test::gpu_count_or_skip(api);
  const std::vector<int> ordinals = first_gpus(count);
  Ranks ranks(api, ordinals);
  dpt_backend_comm *comm = comm_over(api, ranks, ordinals);
  const size_t n = 3 * 257;
  std::vector<double *> buffers;
  std::vector<double> sums(n, 0.0);
  for (int r = 0; r < count; ++r) {
    std::vector<double> values(n);
    const std::vector<float> a = integers(n, 3300 + uint64_t(r), -1000000, 1000000);
    for (size_t i = 0; i < n; ++i) values[i] = std::ldexp(double(a[i]), int(i % 19)) + std::ldexp(1.0, -10);
    for (size_t i = 0; i < n; ++i) sums[i] += values[i];
    std::vector<float> as_floats(2 * n);
    std::memcpy(as_floats.data(), values.data(), n * sizeof(double));
    buffers.push_back(reinterpret_cast<double *>(ranks.upload(size_t(r), as_floats)));
  }
  auto download = [&](size_t r) {
    const std::vector<float> raw = ranks.download(r, reinterpret_cast<const float *>(buffers[r]), 2 * n);
    std::vector<double> v(n);
    std::memcpy(v.data(), raw.data(), n * sizeof(double));
    return v;
  };
  for (int round = 0; round < 2; ++round) {
    check(api.comm_all_reduce_f64(comm, ranks.contexts.data(), buffers.data(), n, 60.0, ranks.error,
                                  sizeof ranks.error),
          "comm_all_reduce_f64", ranks.error);
    for (size_t r = 0; r < size_t(count); ++r) {
      const std::vector<double> got = download(r);
      assert_memory_equal(got.data(), sums.data(), n * sizeof(double));
    }
    // The next round sums the sums on rank 0 and zeros elsewhere.
    for (size_t r = 1; r < size_t(count); ++r)
      check(
          api.mem_set(ranks.contexts[r], buffers[r], 0, n * sizeof(double), ranks.error, sizeof ranks.error),
          "mem_set", ranks.error);
  }
  std::vector<double *> missing = buffers;
  missing.back() = nullptr;
  assert_int_equal(api.comm_all_reduce_f64(comm, ranks.contexts.data(), missing.data(), n, 60.0, ranks.error,
                                           sizeof ranks.error),
                   DPT_BACKEND_ERROR_INVALID_ARGUMENT);
  print_message("a NULL buffer: %s\n", ranks.error);
  check(api.comm_all_reduce_f64(comm, ranks.contexts.data(), buffers.data(), n, 60.0, ranks.error,
                                sizeof ranks.error),
        "comm_all_reduce_f64 after a refused call", ranks.error);
  check(cuda_test::test_extension(api).comm_inject_hang(comm, count - 1, ranks.error, sizeof ranks.error),
        "comm_inject_hang", ranks.error);
  const auto start = std::chrono::steady_clock::now();
  const int rc = api.comm_all_reduce_f64(comm, ranks.contexts.data(), buffers.data(), n, 2.0, ranks.error,
                                         sizeof ranks.error);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  print_message("float64 all-reduce with a missing rank: %d after %.2f s: %s\n", rc, seconds, ranks.error);
  assert_int_equal(rc, DPT_BACKEND_ERROR_COMMUNICATION);
  assert_non_null(std::strstr(ranks.error, "ncclCommAbort"));
  assert_true(seconds >= 2.0 && seconds < 30.0);
  assert_int_equal(api.comm_all_reduce_f64(comm, ranks.contexts.data(), buffers.data(), n, 2.0, ranks.error,
                                           sizeof ranks.error),
                   DPT_BACKEND_ERROR_COMMUNICATION);
  api.comm_destroy(comm);
}

// GPU: the 16-bit wires over every GPU: a call with the smallest buffer alone, then the grouped call of all
// three (the staging grows), then the three again (the staging is reused, the inputs the last sums); every
// rank holds the rule's bits after each. On the float32 wire the same data differ (the wire is used).
void test_gpu_nccl_all_reduce_wire16(void **) {
  const dpt_backend_v2 &api = cuda_test::module_or_skip();
  const int count = cuda_test::gpu_count_or_skip(api);
  const std::vector<int> ordinals = first_gpus(count);
  const size_t k = size_t(count);
  Ranks ranks(api, ordinals);
  dpt_backend_comm *comm = comm_over(api, ranks, ordinals);
  for (const int32_t wire : {DPT_DTYPE_BF16, DPT_DTYPE_F16}) {
    HostBuffers host;
    std::vector<float *> buffers;
    upload_wire_data(ranks, wire, 2000, host, buffers);
    const size_t calls[3] = {1, kBuffers, kBuffers};  // buffers per call: the first alone, then all
    for (int round = 0; round < 3; ++round) {
      const size_t used = calls[round];
      std::vector<float *> pointers;
      for (size_t r = 0; r < k; ++r)
        for (size_t b = 0; b < used; ++b) pointers.push_back(buffers[r * kBuffers + b]);
      check(api.comm_all_reduce(comm, ranks.contexts.data(), used, pointers.data(), kCounts, wire, 60.0,
                                ranks.error, sizeof ranks.error),
            "comm_all_reduce (16-bit wire)", ranks.error);
      expect_rule_sums(ranks, wire, buffers, used, host, "round " + std::to_string(round));
    }
  }
  // The float32 wire on 16-bit-style data: NCCL's float sums, not the rounded ones.
  const std::vector<float> data = wire_data(4099, 2500);
  std::vector<float *> plain;
  for (size_t r = 0; r < k; ++r) plain.push_back(ranks.upload(r, data));
  const size_t n = data.size();
  check(api.comm_all_reduce(comm, ranks.contexts.data(), 1, plain.data(), &n, DPT_DTYPE_F32, 60.0,
                            ranks.error, sizeof ranks.error),
        "comm_all_reduce (float32 wire)", ranks.error);
  const std::vector<float> f32 = ranks.download(0, plain[0], n);
  const std::vector<float> bf16 = wire_reference(DPT_DTYPE_BF16, std::vector<std::vector<float>>(k, data));
  assert_memory_not_equal(f32.data(), bf16.data(), n * sizeof(float));
  api.comm_destroy(comm);
}

// GPU: the 16-bit wires started beside the compute over every GPU: a 16-bit comm_all_reduce of the three
// buffers first (it sizes the staging the window's starts take one after the other), then buffer 0 alone
// and buffers 1 and 2 in one start, work on other memory between them, one wait: every rank holds the
// rule's bits, as the plain call gives them. With the real module, on a fresh communicator, a start larger
// than the staging the first start grew is refused, nothing started, and the wait ends the first (the
// simulator has no staging).
void test_gpu_nccl_all_reduce_started_wire16(void **) {
  const dpt_backend_v2 &api = cuda_test::module_or_skip();
  const int count = cuda_test::gpu_count_or_skip(api);
  const std::vector<int> ordinals = first_gpus(count);
  const size_t k = size_t(count);
  Ranks ranks(api, ordinals);
  dpt_backend_comm *comm = comm_over(api, ranks, ordinals);
  dpt_backend_versions versions;
  api.versions(&versions);
  const bool simulated = std::strstr(versions.text, "simulated") != nullptr;
  for (const int32_t wire : {DPT_DTYPE_BF16, DPT_DTYPE_F16}) {
    HostBuffers host;
    std::vector<float *> buffers, first(k), rest(2 * k), others(k);
    upload_wire_data(ranks, wire, 2600, host, buffers);
    for (size_t r = 0; r < k; ++r) {
      first[r] = buffers[r * kBuffers];
      rest[2 * r] = buffers[r * kBuffers + 1];
      rest[2 * r + 1] = buffers[r * kBuffers + 2];
      others[r] = ranks.upload(r, std::vector<float>(4096));
    }
    // The plain call (the staging sized), then the starts on its sums.
    check(api.comm_all_reduce(comm, ranks.contexts.data(), kBuffers, buffers.data(), kCounts, wire, 60.0,
                              ranks.error, sizeof ranks.error),
          "comm_all_reduce (16-bit wire)", ranks.error);
    expect_rule_sums(ranks, wire, buffers, kBuffers, host, "plain");
    check(api.comm_all_reduce_start(comm, ranks.contexts.data(), 1, first.data(), kCounts, wire, ranks.error,
                                    sizeof ranks.error),
          "comm_all_reduce_start (16-bit, buffer 0)", ranks.error);
    for (size_t r = 0; r < k; ++r)
      check(api.mem_set(ranks.contexts[r], others[r], 0x3f, 4096 * sizeof(float), ranks.error,
                        sizeof ranks.error),
            "mem_set", ranks.error);
    check(api.comm_all_reduce_start(comm, ranks.contexts.data(), 2, rest.data(), kCounts + 1, wire,
                                    ranks.error, sizeof ranks.error),
          "comm_all_reduce_start (16-bit, buffers 1 and 2)", ranks.error);
    check(api.comm_wait_started(comm, ranks.contexts.data(), 60.0, ranks.error, sizeof ranks.error),
          "comm_wait_started", ranks.error);
    expect_rule_sums(ranks, wire, buffers, kBuffers, host, "started");
    if (simulated) continue;
    // A fresh communicator: the first start grows its staging to buffer 0's; a larger start while that one
    // holds it is refused, nothing started; the wait ends the first.
    dpt_backend_comm *fresh = comm_over(api, ranks, ordinals);
    check(api.comm_all_reduce_start(fresh, ranks.contexts.data(), 1, first.data(), kCounts, wire, ranks.error,
                                    sizeof ranks.error),
          "comm_all_reduce_start (16-bit, a fresh staging)", ranks.error);
    assert_int_equal(api.comm_all_reduce_start(fresh, ranks.contexts.data(), 2, rest.data(), kCounts + 1,
                                               wire, ranks.error, sizeof ranks.error),
                     DPT_BACKEND_ERROR_INVALID_ARGUMENT);
    print_message("a start past the staging: %s\n", ranks.error);
    check(api.comm_wait_started(fresh, ranks.contexts.data(), 60.0, ranks.error, sizeof ranks.error),
          "comm_wait_started", ranks.error);
    expect_rule_sums(ranks, wire, buffers, 1, host, "started on a fresh staging");
    api.comm_destroy(fresh);
  }
  api.comm_destroy(comm);
}

// GPU: the 16-bit wires of K replicas on GPU 0 (K = 1, 2, 3, each with its own context; 3 sharing one):
// every replica the rule's bits, in replica order.
void test_gpu_virtual_all_reduce_wire16(void **) {
  const dpt_backend_v2 &api = cuda_test::module_or_skip();
  cuda_test::gpu_count_or_skip(api);
  const size_t count = (size_t(1) << 20) + 7;
  for (const int32_t wire : {DPT_DTYPE_BF16, DPT_DTYPE_F16})
    for (const int replicas : {1, 2, 3, -3}) {  // -3: three replicas on one context
      const bool shared = replicas < 0;
      const size_t k = size_t(shared ? -replicas : replicas);
      Ranks ranks(api, std::vector<int>(shared ? 1 : k, 0));
      std::vector<dpt_backend_context *> contexts(k, ranks.contexts[0]);
      if (!shared) contexts = ranks.contexts;
      std::vector<std::vector<float>> inputs;
      std::vector<float *> buffers;
      for (size_t r = 0; r < k; ++r) {
        inputs.push_back(wire_data(count, 2600 + 10 * uint64_t(wire) + r));
        buffers.push_back(ranks.upload(shared ? 0 : r, inputs.back()));
      }
      check(api.virtual_all_reduce(contexts.data(), int(k), buffers.data(), count, wire, ranks.error,
                                   sizeof ranks.error),
            "virtual_all_reduce (16-bit wire)", ranks.error);
      const std::vector<float> want = wire_reference(wire, inputs);
      for (size_t r = 0; r < k; ++r) {
        const std::string what = std::string(wire_name(wire)) + ", " + std::to_string(k) + " replicas" +
                                 (shared ? " on one context" : "") + ", replica " + std::to_string(r);
        expect_bitwise(what.c_str(), ranks.download(shared ? 0 : r, buffers[r], count), want);
      }
    }
}

// GPU: a rank that never joins. The all-reduce ends after its timeout with a communication error naming
// the abort, the communicator refuses further work, and the contexts go on working. With one GPU the only
// rank is left out (nothing runs, the wait times out); with several, the last one is, after a first round
// that set up NCCL's connections, so the other ranks' kernels really wait for a peer until the abort.
void check_nccl_timeout(const dpt_backend_v2 &api, int count, int32_t wire) {
  const std::vector<int> ordinals = first_gpus(count);
  Ranks ranks(api, ordinals);
  dpt_backend_comm *comm = comm_over(api, ranks, ordinals);
  std::vector<float *> buffers;
  fill(ranks, buffers, 1300);
  if (count > 1)
    check(api.comm_all_reduce(comm, ranks.contexts.data(), kBuffers, buffers.data(), kCounts, wire, 60.0,
                              ranks.error, sizeof ranks.error),
          "comm_all_reduce (first round)", ranks.error);
  check(cuda_test::test_extension(api).comm_inject_hang(comm, count - 1, ranks.error, sizeof ranks.error),
        "comm_inject_hang", ranks.error);
  const auto start = std::chrono::steady_clock::now();
  const int rc = api.comm_all_reduce(comm, ranks.contexts.data(), kBuffers, buffers.data(), kCounts, wire,
                                     2.0, ranks.error, sizeof ranks.error);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  print_message("%s all-reduce with a missing rank: %d after %.2f s: %s\n", wire_name(wire), rc, seconds,
                ranks.error);
  assert_int_equal(rc, DPT_BACKEND_ERROR_COMMUNICATION);
  assert_non_null(std::strstr(ranks.error, "ncclCommAbort"));
  assert_non_null(std::strstr(ranks.error, "cuda:"));
  assert_true(seconds >= 2.0 && seconds < 30.0);
  assert_int_equal(api.comm_all_reduce(comm, ranks.contexts.data(), kBuffers, buffers.data(), kCounts, wire,
                                       2.0, ranks.error, sizeof ranks.error),
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

// Both wires: the 16-bit one's all-to-all and all-gather are bounded by the same wait.
void test_gpu_nccl_timeout(void **) {
  const dpt_backend_v2 &api = cuda_test::module_or_skip();
  const int count = cuda_test::gpu_count_or_skip(api);
  check_nccl_timeout(api, count, DPT_DTYPE_F32);
  check_nccl_timeout(api, count, DPT_DTYPE_BF16);
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
  check(api.virtual_all_reduce(contexts.data(), replicas, buffers.data(), count, DPT_DTYPE_F32, ranks.error,
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
  assert_int_equal(api.virtual_all_reduce(ranks.contexts.data(), 2, same, 8, DPT_DTYPE_F32, ranks.error,
                                          sizeof ranks.error),
                   DPT_BACKEND_ERROR_INVALID_ARGUMENT);
  print_message("shared buffer: %s\n", ranks.error);
  std::vector<dpt_backend_context *> many(33, ranks.contexts[0]);
  std::vector<float *> many_buffers(33, a);
  assert_int_equal(api.virtual_all_reduce(many.data(), 33, many_buffers.data(), 8, DPT_DTYPE_F32, ranks.error,
                                          sizeof ranks.error),
                   DPT_BACKEND_ERROR_INVALID_ARGUMENT);
  print_message("33 replicas: %s\n", ranks.error);
  if (count > 1) {
    float *two[2] = {a, b};
    assert_int_equal(api.virtual_all_reduce(ranks.contexts.data(), 2, two, 8, DPT_DTYPE_F32, ranks.error,
                                            sizeof ranks.error),
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
  // A wire type that is none of float32, bfloat16, float16: refused, the communicator still usable.
  {
    Ranks ranks(api, {0});
    float *buffer = ranks.upload(0, {1.0f, 2.0f});
    const size_t two = 2;
    assert_int_equal(api.comm_all_reduce(comm, ranks.contexts.data(), 1, &buffer, &two, DPT_DTYPE_I32, 60.0,
                                         error, sizeof error),
                     DPT_BACKEND_ERROR_INVALID_ARGUMENT);
    assert_non_null(std::strstr(error, "wire dtype 3"));
    print_message("wire dtype 3: %s\n", error);
    assert_int_equal(
        api.virtual_all_reduce(ranks.contexts.data(), 1, &buffer, 2, -1, ranks.error, sizeof ranks.error),
        DPT_BACKEND_ERROR_INVALID_ARGUMENT);
    assert_non_null(std::strstr(ranks.error, "wire dtype -1"));
    check(api.comm_all_reduce(comm, ranks.contexts.data(), 1, &buffer, &two, DPT_DTYPE_BF16, 60.0, error,
                              sizeof error),
          "comm_all_reduce after a refused wire", error);
    expect_bitwise("1 rank, bf16", ranks.download(0, buffer, 2), {1.0f, 2.0f});
  }
  assert_int_equal(cuda_test::test_extension(api).comm_inject_hang(comm, 1, error, sizeof error),
                   DPT_BACKEND_ERROR_INVALID_ARGUMENT);
  api.comm_destroy(comm);
}

}  // namespace collectives_test

int main(int argc, char **argv) {
  using namespace collectives_test;
  if (!cuda_test::start(argc, argv)) return 2;
  const CMUnitTest tests[] = {
      cmocka_unit_test(test_gpu_nccl_all_reduce),
      cmocka_unit_test(test_gpu_nccl_timeout),
      cmocka_unit_test(test_gpu_virtual_all_reduce),
      cmocka_unit_test(test_gpu_nccl_all_reduce_wire16),
      cmocka_unit_test(test_gpu_virtual_all_reduce_wire16),
      cmocka_unit_test(test_gpu_comm_misuse),
      cmocka_unit_test(test_gpu_nccl_all_gather_ranges),
      cmocka_unit_test(test_gpu_nccl_all_reduce_f64),
      cmocka_unit_test(test_gpu_nccl_reduce_ranges),
      cmocka_unit_test(test_gpu_nccl_all_reduce_started),
      cmocka_unit_test(test_gpu_nccl_all_reduce_started_wire16),
      cmocka_unit_test(test_gpu_nccl_exchange),
      cmocka_unit_test(test_gpu_nccl_exchange_started),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
