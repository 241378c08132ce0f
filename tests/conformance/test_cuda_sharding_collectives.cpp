// The CUDA module's collectives of sharded training and point to point, part of test_cuda_collectives'
// binary (its main registers these cases; the tolerances are its: exact): the gather of a sharded vector's
// uneven ranges (comm_all_gather_ranges), bit for bit; a sharded gradient's bucket reduced to its owners'
// uneven parts (comm_reduce_ranges, and started beside the compute: comm_reduce_ranges_start), exact on
// integer data and by the wire's rule on the 16-bit wires; grouped sends and receives between ranks
// (comm_exchange), bit for bit, and started after a reduce whose result they send on (comm_exchange_start).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "collectives_fixtures.hpp"

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

// GPU: a sharded vector gathered over every GPU (comm_all_gather_ranges): uneven ranges, the last rank's
// empty from 3 GPUs on; every rank then holds each range as its owner held it, bit for bit.
void test_gpu_nccl_all_gather_ranges(void **) {
  const dpt_backend_v2 &api = cuda_test::module_or_skip();
  const int count = cuda_test::gpu_count_or_skip(api);
  const std::vector<int> ordinals = first_gpus(count);
  Ranks ranks(api, ordinals);
  dpt_backend_comm *comm = comm_over(api, ranks, ordinals);
  const size_t n = (size_t(1) << 20) + 4099;
  std::vector<size_t> bounds = uneven_bounds(n, size_t(count));
  std::vector<std::vector<float>> inputs;
  std::vector<float *> buffers;
  for (int r = 0; r < count; ++r) {
    inputs.push_back(cuda_test::uniform(n, 3100 + uint64_t(r), -1.0f, 1.0f));
    buffers.push_back(ranks.upload(size_t(r), inputs.back()));
  }
  check(api.comm_all_gather_ranges(comm, ranks.contexts.data(), buffers.data(), bounds.data(), 60.0,
                                   ranks.error, sizeof ranks.error),
        "comm_all_gather_ranges", ranks.error);
  std::vector<float> want(n);
  for (int q = 0; q < count; ++q)
    std::copy(inputs[size_t(q)].begin() + long(bounds[size_t(q)]),
              inputs[size_t(q)].begin() + long(bounds[size_t(q) + 1]),
              want.begin() + long(bounds[size_t(q)]));
  for (int r = 0; r < count; ++r)
    expect_bitwise(("gathered ranges, rank " + std::to_string(r)).c_str(),
                   ranks.download(size_t(r), buffers[size_t(r)], n), want);
  std::vector<size_t> descending = bounds;
  if (count > 1) {
    std::swap(descending[0], descending[1]);
    assert_int_equal(api.comm_all_gather_ranges(comm, ranks.contexts.data(), buffers.data(),
                                                descending.data(), 60.0, ranks.error, sizeof ranks.error),
                     DPT_BACKEND_ERROR_INVALID_ARGUMENT);
  }
  api.comm_destroy(comm);
}

// GPU: a sharded gradient's bucket reduced to its owners (comm_reduce_ranges) over every GPU: uneven parts
// (the last rank's empty from 3 GPUs on), rank 0's received in place in its send vector, the others' into
// buffers of their own; the send vectors untouched but for the in-place part. On the float32 wire integer
// data, so every owner must hold the exact sums of its part; on the 16-bit wires fractions over 40 binades
// and the wire's rule evaluated on the host, as for the 16-bit all-reduce. Descending bounds are refused.
// Then the reduce started beside the compute (comm_reduce_ranges_start), joined and waited for, on every
// wire. started: comm_reduce_ranges_start followed by a float32 all-reduce start of another buffer, a join
// that keeps the last start (the reduce joined: each owner's part doubled on its stream afterwards, which
// must see the sums) and the wait.
void check_reduce_ranges(const dpt_backend_v2 &api, int count, int32_t wire, bool started = false) {
  const std::vector<int> ordinals = first_gpus(count);
  Ranks ranks(api, ordinals);
  dpt_backend_comm *comm = comm_over(api, ranks, ordinals);
  const size_t n = (size_t(1) << 20) + 4099;
  std::vector<size_t> bounds = uneven_bounds(n, size_t(count));
  std::vector<std::vector<float>> inputs;
  std::vector<const float *> sends;
  std::vector<float *> recvs;
  for (int r = 0; r < count; ++r) {
    inputs.push_back(wire == DPT_DTYPE_F32 ? integers(n, 3400 + uint64_t(r), -1000, 1000)
                                           : wire_data(n, 3500 + uint64_t(r)));
    float *send = ranks.upload(size_t(r), inputs.back());
    sends.push_back(send);
    const size_t own = bounds[size_t(r) + 1] - bounds[size_t(r)];
    recvs.push_back(own == 0 ? nullptr
                    : r == 0 ? send + bounds[0]
                             : ranks.upload(size_t(r), std::vector<float>(own, -1.0f)));
  }
  std::vector<float> sums(n, 0.0f), column(static_cast<size_t>(count));
  for (size_t i = 0; i < n; ++i) {
    for (int r = 0; r < count; ++r) column[size_t(r)] = inputs[size_t(r)][i];
    if (wire == DPT_DTYPE_F32)
      for (const float v : column) sums[i] += v;  // exact: |sum| <= 1000 * ranks
    else
      sums[i] = wire_rule(wire, column);
  }
  if (!started) {
    check(api.comm_reduce_ranges(comm, ranks.contexts.data(), sends.data(), recvs.data(), bounds.data(), wire,
                                 60.0, ranks.error, sizeof ranks.error),
          "comm_reduce_ranges", ranks.error);
  } else {
    char *error = ranks.error;
    const size_t error_size = sizeof ranks.error;
    std::vector<float *> others;
    for (int r = 0; r < count; ++r)
      others.push_back(ranks.upload(size_t(r), std::vector<float>(kCounts[1], 1.0f)));
    check(api.comm_join_started(comm, ranks.contexts.data(), 0, error, error_size),
          "comm_join_started (none)", error);
    check(api.comm_reduce_ranges_start(comm, ranks.contexts.data(), sends.data(), recvs.data(), bounds.data(),
                                       wire, error, error_size),
          "comm_reduce_ranges_start", error);
    check(api.comm_all_reduce_start(comm, ranks.contexts.data(), 1, others.data(), kCounts + 1, DPT_DTYPE_F32,
                                    error, error_size),
          "comm_all_reduce_start", error);
    check(api.comm_join_started(comm, ranks.contexts.data(), 2, error, error_size),
          "comm_join_started (keep 2)", error);
    check(api.comm_join_started(comm, ranks.contexts.data(), 1, error, error_size),
          "comm_join_started (keep 1)", error);
    for (int r = 0; r < count; ++r) {
      const size_t own = bounds[size_t(r) + 1] - bounds[size_t(r)];
      if (own > 0)
        check(api.scale(ranks.contexts[size_t(r)], recvs[size_t(r)], own, 2.0f, error, error_size), "scale",
              error);
    }
    for (float &v : sums) v *= 2.0f;  // (exact)
    check(api.comm_wait_started(comm, ranks.contexts.data(), 60.0, error, error_size), "comm_wait_started",
          error);
    for (int r = 0; r < count; ++r)
      expect_bitwise("the all-reduce started after the reduce",
                     ranks.download(size_t(r), others[size_t(r)], kCounts[1]),
                     std::vector<float>(kCounts[1], float(count)));
    assert_int_equal(api.comm_reduce_ranges_start(comm, ranks.contexts.data(), sends.data(), recvs.data(),
                                                  bounds.data(), 77, error, error_size),
                     DPT_BACKEND_ERROR_INVALID_ARGUMENT);
    print_message("a started reduce on wire type 77: %s\n", error);
  }
  for (int r = 0; r < count; ++r) {
    const size_t lo = bounds[size_t(r)], own = bounds[size_t(r) + 1] - lo;
    if (own > 0)
      expect_bitwise(("reduced part, rank " + std::to_string(r)).c_str(),
                     ranks.download(size_t(r), recvs[size_t(r)], own),
                     std::vector<float>(sums.begin() + long(lo), sums.begin() + long(lo + own)));
    if (r > 0)
      expect_bitwise(("send vector untouched, rank " + std::to_string(r)).c_str(),
                     ranks.download(size_t(r), sends[size_t(r)], n), inputs[size_t(r)]);
  }
  if (count > 1) {
    std::vector<size_t> descending = bounds;
    std::swap(descending[0], descending[1]);
    assert_int_equal(api.comm_reduce_ranges(comm, ranks.contexts.data(), sends.data(), recvs.data(),
                                            descending.data(), wire, 60.0, ranks.error, sizeof ranks.error),
                     DPT_BACKEND_ERROR_INVALID_ARGUMENT);
  }
  assert_int_equal(api.comm_reduce_ranges(comm, ranks.contexts.data(), sends.data(), recvs.data(),
                                          bounds.data(), 77, 60.0, ranks.error, sizeof ranks.error),
                   DPT_BACKEND_ERROR_INVALID_ARGUMENT);
  api.comm_destroy(comm);
}

void test_gpu_nccl_reduce_ranges(void **) {
  const dpt_backend_v2 &api = cuda_test::module_or_skip();
  const int count = cuda_test::gpu_count_or_skip(api);
  for (const int32_t wire : {DPT_DTYPE_F32, DPT_DTYPE_BF16, DPT_DTYPE_F16}) {
    check_reduce_ranges(api, count, wire);
    check_reduce_ranges(api, count, wire, true);
  }
}

// GPU: grouped sends and receives (comm_exchange) over every GPU: each rank sends two messages to the next
// rank (matched in order) and a large one to the one before, all in one group, so that every rank sends and
// receives at once; the received bits are the sent ones. Then misuse (a message to the rank itself, a peer
// out of range: refused, the communicator still usable; no message: nothing), and a receive no peer sends
// to: a communication error after the timeout, the communicator aborted.
void test_gpu_nccl_exchange(void **) {
  const dpt_backend_v2 &api = cuda_test::module_or_skip();
  const int count = cuda_test::gpu_count_or_skip(api);
  const std::vector<int> ordinals = first_gpus(count);
  Ranks ranks(api, ordinals);
  dpt_backend_comm *comm = comm_over(api, ranks, ordinals);
  const size_t n = size_t(count), sizes[3] = {4099, 7, (size_t(1) << 20) + 5};
  std::vector<std::vector<std::vector<float>>> sent(n);  // sent[r][m]
  std::vector<std::vector<float *>> from(n), into(n);    // per rank, its three send and receive buffers
  std::vector<dpt_backend_message> messages;
  for (size_t r = 0; r < n; ++r) {
    const int32_t next = int32_t((r + 1) % n), previous = int32_t((r + n - 1) % n);
    for (size_t m = 0; m < 3; ++m) {
      sent[r].push_back(cuda_test::uniform(sizes[m], 4100 + 10 * r + m, -1.0f, 1.0f));
      from[r].push_back(ranks.upload(r, sent[r][m]));
      into[r].push_back(ranks.upload(r, std::vector<float>(sizes[m], 0.0f)));
    }
    if (n < 2) continue;
    messages.push_back({int32_t(r), next, 0, from[r][0], sizes[0]});
    messages.push_back({int32_t(r), previous, 0, from[r][2], sizes[2]});
    messages.push_back({int32_t(r), next, 0, from[r][1], sizes[1]});
    messages.push_back({int32_t(r), previous, 1, into[r][0], sizes[0]});
    messages.push_back({int32_t(r), next, 1, into[r][2], sizes[2]});
    messages.push_back({int32_t(r), previous, 1, into[r][1], sizes[1]});
  }
  if (n > 1) {
    check(api.comm_exchange(comm, ranks.contexts.data(), messages.data(), messages.size(), 60.0, ranks.error,
                            sizeof ranks.error),
          "comm_exchange", ranks.error);
    for (size_t r = 0; r < n; ++r) {
      const size_t previous = (r + n - 1) % n, next = (r + 1) % n;
      expect_bitwise(("first message to rank " + std::to_string(r)).c_str(),
                     ranks.download(r, into[r][0], sizes[0]), sent[previous][0]);
      expect_bitwise(("second message to rank " + std::to_string(r)).c_str(),
                     ranks.download(r, into[r][1], sizes[1]), sent[previous][1]);
      expect_bitwise(("large message to rank " + std::to_string(r)).c_str(),
                     ranks.download(r, into[r][2], sizes[2]), sent[next][2]);
      expect_bitwise("a sent buffer", ranks.download(r, from[r][0], sizes[0]), sent[r][0]);
    }
  } else {
    print_message("one GPU: no peer to exchange with; misuse only\n");
  }
  dpt_backend_message self = {0, 0, 0, from[0][1], sizes[1]};
  assert_int_equal(
      api.comm_exchange(comm, ranks.contexts.data(), &self, 1, 60.0, ranks.error, sizeof ranks.error),
      DPT_BACKEND_ERROR_INVALID_ARGUMENT);
  assert_non_null(std::strstr(ranks.error, "not to itself"));
  print_message("to itself: %s\n", ranks.error);
  dpt_backend_message beyond = {0, int32_t(n), 0, from[0][1], sizes[1]};
  assert_int_equal(
      api.comm_exchange(comm, ranks.contexts.data(), &beyond, 1, 60.0, ranks.error, sizeof ranks.error),
      DPT_BACKEND_ERROR_INVALID_ARGUMENT);
  check(api.comm_exchange(comm, ranks.contexts.data(), nullptr, 0, 60.0, ranks.error, sizeof ranks.error),
        "comm_exchange of nothing", ranks.error);
  if (n > 1) {
    check(api.comm_exchange(comm, ranks.contexts.data(), messages.data(), messages.size(), 60.0, ranks.error,
                            sizeof ranks.error),
          "comm_exchange after misuse", ranks.error);
    dpt_backend_message lonely = {0, 1, 1, into[0][1], sizes[1]};  // rank 1 sends nothing
    const auto t0 = std::chrono::steady_clock::now();
    assert_int_equal(
        api.comm_exchange(comm, ranks.contexts.data(), &lonely, 1, 1.0, ranks.error, sizeof ranks.error),
        DPT_BACKEND_ERROR_COMMUNICATION);
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    print_message("unmatched receive, after %.2f s: %s\n", waited, ranks.error);
    assert_true(waited >= 0.9 && waited < 30.0);
    assert_int_equal(api.comm_exchange(comm, ranks.contexts.data(), messages.data(), messages.size(), 60.0,
                                       ranks.error, sizeof ranks.error),
                     DPT_BACKEND_ERROR_COMMUNICATION);  // aborted
  }
  api.comm_destroy(comm);
}

// GPU: a piece reduced to one rank and sent on from there, both started beside the compute
// (comm_reduce_ranges_start, then comm_exchange_start: a sharded optimizer's process scope): every rank's
// integers reduced in place to rank 0, which sends the sums to the last rank; the wait; the last rank holds
// the exact sums (the exchange saw the reduce's result: the communication stream's order). A start of no
// message does nothing; a message to the rank itself is refused with nothing started (the wait then ends
// at once).
void test_gpu_nccl_exchange_started(void **) {
  const dpt_backend_v2 &api = cuda_test::module_or_skip();
  const int count = cuda_test::gpu_count_or_skip(api);
  const std::vector<int> ordinals = first_gpus(count);
  Ranks ranks(api, ordinals);
  dpt_backend_comm *comm = comm_over(api, ranks, ordinals);
  const size_t n = size_t(count), length = (size_t(1) << 18) + 77, last = n - 1;
  std::vector<float> sum(length, 0.0f);
  std::vector<const float *> sends;
  std::vector<float *> recvs(n, nullptr);
  for (size_t r = 0; r < n; ++r) {
    const std::vector<float> data = integers(length, 4200 + r, -1000, 1000);
    for (size_t i = 0; i < length; ++i) sum[i] += data[i];
    sends.push_back(ranks.upload(r, data));
  }
  recvs[0] = const_cast<float *>(sends[0]);  // rank 0 owns everything, in place
  std::vector<size_t> bounds(n + 1, length);
  bounds[0] = 0;
  float *into = ranks.upload(last, std::vector<float>(length, 0.0f));
  check(api.comm_reduce_ranges_start(comm, ranks.contexts.data(), sends.data(), recvs.data(), bounds.data(),
                                     DPT_DTYPE_F32, ranks.error, sizeof ranks.error),
        "comm_reduce_ranges_start", ranks.error);
  std::vector<dpt_backend_message> messages;
  if (n > 1) {
    messages.push_back({0, int32_t(last), 0, recvs[0], length});
    messages.push_back({int32_t(last), 0, 1, into, length});
  }
  check(api.comm_exchange_start(comm, ranks.contexts.data(), messages.data(), messages.size(), ranks.error,
                                sizeof ranks.error),
        "comm_exchange_start", ranks.error);
  check(api.comm_exchange_start(comm, ranks.contexts.data(), nullptr, 0, ranks.error, sizeof ranks.error),
        "comm_exchange_start of nothing", ranks.error);
  check(api.comm_wait_started(comm, ranks.contexts.data(), 60.0, ranks.error, sizeof ranks.error),
        "comm_wait_started", ranks.error);
  expect_bitwise("reduced at rank 0", ranks.download(0, recvs[0], length), sum);
  if (n > 1) expect_bitwise("sent on to the last rank", ranks.download(last, into, length), sum);
  dpt_backend_message self = {0, 0, 0, recvs[0], length};
  assert_int_equal(
      api.comm_exchange_start(comm, ranks.contexts.data(), &self, 1, ranks.error, sizeof ranks.error),
      DPT_BACKEND_ERROR_INVALID_ARGUMENT);
  check(api.comm_wait_started(comm, ranks.contexts.data(), 60.0, ranks.error, sizeof ranks.error),
        "comm_wait_started after a refused start", ranks.error);
  api.comm_destroy(comm);
}

}  // namespace collectives_test
