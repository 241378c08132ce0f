// What the CUDA collectives' conformance cases share (test_cuda_collectives.cpp, the all-reduces;
// test_cuda_sharding_collectives.cpp, the collectives of sharded training and point to point; one binary):
// the ranks' contexts, their data on the float32 wire (integers, exact sums in any order) and on the 16-bit
// wires (fractions over 40 binades, the wire's rule evaluated on the host), and the communicator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda_harness.hpp"

namespace collectives_test {

inline constexpr size_t kCounts[] = {1, 4099, (size_t(1) << 20) + 5};  // buffers of one grouped all-reduce
inline constexpr size_t kBuffers = sizeof kCounts / sizeof kCounts[0];

// One context per rank, created on the given GPUs and destroyed at the end.
struct Ranks {
  const dpt_backend_v2 &api;
  std::vector<dpt_backend_context *> contexts;
  char error[512] = "";

  Ranks(const dpt_backend_v2 &a, const std::vector<int> &ordinals) : api(a) {
    for (const int ordinal : ordinals) {
      dpt_backend_context *ctx = nullptr;
      cuda_test::check(api.context_create(ordinal, nullptr, &ctx, error, sizeof error), "context_create",
                       error);
      contexts.push_back(ctx);
    }
  }
  ~Ranks() {
    for (dpt_backend_context *ctx : contexts) api.context_destroy(ctx);
  }
  float *upload(size_t rank, const std::vector<float> &host) {
    void *p = nullptr;
    cuda_test::check(api.mem_alloc(contexts[rank], host.size() * sizeof(float), &p, error, sizeof error),
                     "mem_alloc", error);
    cuda_test::check(
        api.copy_to_device(contexts[rank], p, host.data(), host.size() * sizeof(float), error, sizeof error),
        "copy_to_device", error);
    cuda_test::check(api.context_synchronize(contexts[rank], error, sizeof error), "context_synchronize",
                     error);
    return static_cast<float *>(p);
  }
  std::vector<float> download(size_t rank, const float *device, size_t count) {
    std::vector<float> host(count);
    cuda_test::check(api.context_synchronize(contexts[rank], error, sizeof error), "context_synchronize",
                     error);
    cuda_test::check(
        api.copy_to_host(contexts[rank], host.data(), device, count * sizeof(float), error, sizeof error),
        "copy_to_host", error);
    cuda_test::check(api.context_synchronize(contexts[rank], error, sizeof error), "context_synchronize",
                     error);
    return host;
  }
};

// Fills buffers[rank * kBuffers + b] with integers and returns the exact sums per buffer.
std::vector<std::vector<float>> fill(Ranks &ranks, std::vector<float *> &buffers, uint64_t seed);
// GPUs 0 .. count-1, one rank each.
std::vector<int> first_gpus(int count);
// A NCCL communicator with one rank per GPU of ordinals.
dpt_backend_comm *comm_over(const dpt_backend_v2 &api, Ranks &ranks, const std::vector<int> &ordinals);
// ranks + 1 offsets cutting n floats into uneven parts (rank q's end at n q^2 / ranks^2), the last rank's
// empty from 3 ranks on.
std::vector<size_t> uneven_bounds(size_t n, size_t ranks);

// Fractions for a 16-bit wire: uniform in (-1, 1) times 2^e, e cycling through -30 .. 9 (float16 flushes the
// lowest to zero and keeps 2^-24 .. 2^-14 as subnormals), every 97th value a float32 subnormal (bfloat16
// takes it to zero). Sums stay far below float16's 65504: no infinity, no NaN, whose payload bits the rule
// does not pin.
std::vector<float> wire_data(size_t count, uint64_t seed);
// The rule of a 16-bit wire (backend_interface.h) for values[0 .. K) in rank order.
float wire_rule(int32_t wire, const std::vector<float> &values);
// The rule over ranks for every element: want[i] = wire_rule(inputs[0][i], inputs[1][i], ...).
std::vector<float> wire_reference(int32_t wire, const std::vector<std::vector<float>> &inputs);
const char *wire_name(int32_t wire);

// What every rank's buffers hold, on the host: host[r][b], rank r's buffer b.
using HostBuffers = std::vector<std::vector<std::vector<float>>>;

// Every rank's kBuffers buffers of 16-bit-wire data (wire_data, seeds from `seed`), on the host and on the
// ranks' GPUs (buffers[r * kBuffers + b]).
void upload_wire_data(Ranks &ranks, int32_t wire, uint64_t seed, HostBuffers &host,
                      std::vector<float *> &buffers);
// Every rank's buffers 0 .. used - 1 hold the wire's rule over the ranks' host values, bit for bit; the
// host values become those sums.
void expect_rule_sums(Ranks &ranks, int32_t wire, const std::vector<float *> &buffers, size_t used,
                      HostBuffers &host, const std::string &what);

// test_cuda_sharding_collectives.cpp
void test_gpu_nccl_all_gather_ranges(void **);
void test_gpu_nccl_reduce_ranges(void **);
void test_gpu_nccl_exchange(void **);
void test_gpu_nccl_exchange_started(void **);

}  // namespace collectives_test
