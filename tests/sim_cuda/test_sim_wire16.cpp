// The 16-bit wire of the simulated collectives (backend_interface.h: wire_dtype of comm_all_reduce and
// virtual_all_reduce), the semantics the real module's kernels implement: each rank's value rounded to
// bfloat16 / float16 (to nearest even; bfloat16 takes float32 subnormals to zero), the float32 sum from +0 in
// rank order, the sum rounded. Checked bit for bit against values worked out by hand (below, each with its
// reasoning), against the same rule composed from the core's roundings on pseudo-random data, on every
// rank; an unknown wire type is refused and leaves the communicator usable.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/float16.hpp"
#include "test_sim_cuda.hpp"

namespace sim_test {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

struct Case {
  float x0, x1, want;  // rank 0's and rank 1's values, the expected sum on both
};

// bfloat16: 8 significant bits, so near 1 the step is 2^-7 and near 2 it is 2^-6.
const Case kBf16Cases[] = {
    // 1 + 3 2^-9 is 3/4 of a step above 1: up to 1 + 2^-7; 1 + 2^-9 down to 1. The float32 sum of the
    // rounded values, 2 + 2^-7, is half a step above 2: to even, 2. (The float32 wire gives 2 + 2^-7.)
    {0x1.018p0f, 0x1.008p0f, 2.0f},
    // bfloat16 values, cancelling exactly: 2^-7.
    {0x1.02p0f, -1.0f, 0x1p-7f},
    // A float32 subnormal becomes zero (the core's to_bf16 and AVX512_BF16), so the sum is +0.
    {0x1p-130f, 0.0f, 0.0f},
    // Ties: 1 + 2^-8 to even 1; 1 + 3 2^-8 to even 1 + 2^-6. Sum 2 + 2^-6 = 0x1.02p1, a bfloat16 value.
    {0x1.01p0f, 0x1.03p0f, 0x1.02p1f},
    // The sum starts at +0: two negative zeros give +0 (the float32 wire gives -0).
    {-0.0f, -0.0f, 0.0f},
    // bfloat16 has float32's range: 3e38 rounds to 3.004e38, and the float32 sum of two of them overflows
    // to infinity, which stays infinite.
    {3.0e38f, 3.0e38f, kInf},
};

// float16: 11 significant bits, so near 1 the step is 2^-10 and near 2 it is 2^-9; largest finite 65504.
const Case kF16Cases[] = {
    // 1 + 2^-11 + 2^-13 is 5/8 of a step above 1: up to 1 + 2^-10; 1 + 2^-12 down to 1. The sum 2 + 2^-10 is
    // half a step above 2: to even, 2.
    {0x1.0028p0f, 0x1.001p0f, 2.0f},
    // Exact float16 values whose sum passes 65504 (65520 and beyond round to infinity).
    {60000.0f, 10000.0f, kInf},
    // Subnormals are kept: 3 2^-24 is one; 2^-25, half of the smallest, ties to even 0. Sum 3 2^-24.
    {0x1.8p-23f, 0x1p-25f, 0x1.8p-23f},
    // 65519 rounds down to 65504 (the step there is 32; 65520 would round up to infinity).
    {65519.0f, 0.0f, 65504.0f},
    // +0 start: -0 and -0 give +0; 1e-9 and -1e-9 are below 2^-25 and round to +0 and -0, sum +0.
    {-0.0f, -0.0f, 0.0f},
    {1e-9f, -1e-9f, 0.0f},
};

uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

void expect_bits(const char *what, size_t i, float got, float want) {
  if (bits(got) != bits(want))
    fail_msg("%s, element %zu: %a (0x%08x), expected %a (0x%08x)", what, i, double(got), bits(got),
             double(want), bits(want));
}

// The rule, composed from the core's roundings (what the hand-worked cases check independently).
float reference_sum(int32_t wire, const std::vector<float> &values) {
  auto r = [wire](float x) { return wire == DPT_DTYPE_BF16 ? dpt::round_to_bf16(x) : dpt::round_to_f16(x); };
  float s = 0.0f;
  for (const float v : values) s += r(v);
  return r(s);
}

struct TwoRanks {
  dpt_backend_context *contexts[2];
  dpt_backend_comm *comm = nullptr;
  TwoRanks() : contexts{context(0), context(1)} {
    const int ordinals[2] = {0, 1};
    OK(api->comm_create(2, ordinals, &comm, error, sizeof error));
  }
  ~TwoRanks() {
    api->comm_destroy(comm);
    for (dpt_backend_context *c : contexts) api->context_destroy(c);
  }
};

}  // namespace

// The hand-worked cases on two ranks (NCCL stand-in), both ranks the expected bits.
void test_wire16_known_values(void **) {
  TwoRanks ranks;
  for (const int32_t wire : {DPT_DTYPE_BF16, DPT_DTYPE_F16}) {
    const bool bf16 = wire == DPT_DTYPE_BF16;
    const Case *cases = bf16 ? kBf16Cases : kF16Cases;
    const size_t n = bf16 ? sizeof kBf16Cases / sizeof kBf16Cases[0] : sizeof kF16Cases / sizeof kF16Cases[0];
    std::vector<float> x0, x1;
    for (size_t i = 0; i < n; ++i) x0.push_back(cases[i].x0), x1.push_back(cases[i].x1);
    float *buffers[2] = {upload(ranks.contexts[0], x0), upload(ranks.contexts[1], x1)};
    const size_t counts[1] = {n};
    OK(api->comm_all_reduce(ranks.comm, ranks.contexts, 1, buffers, counts, wire, 10.0, error, sizeof error));
    for (int r = 0; r < 2; ++r) {
      const std::vector<float> got = download(ranks.contexts[r], buffers[r], n);
      for (size_t i = 0; i < n; ++i)
        expect_bits((std::string(bf16 ? "bf16" : "fp16") + " rank " + std::to_string(r)).c_str(), i, got[i],
                    cases[i].want);
    }
  }
}

// Pseudo-random buffers of several sizes (one empty) in one call, on both wires: every element the rule's
// bits on both ranks; the float32 wire on the same data differs (the wire is used).
void test_wire16_matches_rule(void **) {
  TwoRanks ranks;
  const size_t counts[3] = {4099, 0, 17};
  for (const int32_t wire : {DPT_DTYPE_BF16, DPT_DTYPE_F16}) {
    std::vector<std::vector<float>> data(6);
    float *buffers[6] = {};
    float *plain[6] = {};
    for (size_t r = 0; r < 2; ++r)
      for (size_t b = 0; b < 3; ++b) {
        if (counts[b] == 0) continue;
        data[r * 3 + b] = pattern(counts[b], uint32_t(100 + 10 * r + b));
        for (float &v : data[r * 3 + b]) v *= 3.0f;
        buffers[r * 3 + b] = upload(ranks.contexts[r], data[r * 3 + b]);
        plain[r * 3 + b] = upload(ranks.contexts[r], data[r * 3 + b]);
      }
    OK(api->comm_all_reduce(ranks.comm, ranks.contexts, 3, buffers, counts, wire, 10.0, error, sizeof error));
    OK(api->comm_all_reduce(ranks.comm, ranks.contexts, 3, plain, counts, DPT_DTYPE_F32, 10.0, error,
                            sizeof error));
    size_t differ = 0;
    for (size_t b = 0; b < 3; ++b) {
      if (counts[b] == 0) continue;
      const std::vector<float> got0 = download(ranks.contexts[0], buffers[b], counts[b]);
      const std::vector<float> got1 = download(ranks.contexts[1], buffers[3 + b], counts[b]);
      const std::vector<float> f32 = download(ranks.contexts[0], plain[b], counts[b]);
      for (size_t i = 0; i < counts[b]; ++i) {
        const float want = reference_sum(wire, {data[b][i], data[3 + b][i]});
        expect_bits("rank 0", i, got0[i], want);
        expect_bits("rank 1", i, got1[i], want);
        differ += bits(f32[i]) != bits(want);
      }
    }
    print_message("%s wire: %zu of %zu sums differ from the float32 wire's\n",
                  wire == DPT_DTYPE_BF16 ? "bf16" : "fp16", differ, counts[0] + counts[2]);
    assert_true(differ > counts[0] / 2);
  }
}

// Replicas on one GPU: the same rule, in replica order. 2^16 + (2^-8 + 2^-15) rounds up to 2^16 + 2^-7 in
// float32 (more than half of its step 2^-7), so the order 0, 1, 2 gives 2^-7 (the order 2, 1, 0 would give
// 2^-8). One replica: its value rounded. The hand-worked cases on replicas too, and an unknown type.
void test_wire16_virtual(void **) {
  dpt_backend_context *contexts[3] = {context(0), context(0), context(0)};
  const float values[3] = {0x1p16f, 0x1.02p-8f, -0x1p16f};
  float *buffers[3];
  for (int r = 0; r < 3; ++r) buffers[r] = upload(contexts[r], std::vector<float>(3, values[r]));
  OK(api->virtual_all_reduce(contexts, 3, buffers, 3, DPT_DTYPE_BF16, error, sizeof error));
  for (int r = 0; r < 3; ++r)
    for (const float v : download(contexts[r], buffers[r], 3)) expect_bits("3 replicas, bf16", 0, v, 0x1p-7f);
  float *one = upload(contexts[0], {0x1.018p0f});
  OK(api->virtual_all_reduce(contexts, 1, &one, 1, DPT_DTYPE_BF16, error, sizeof error));
  expect_bits("1 replica, bf16", 0, download(contexts[0], one, 1)[0], 0x1.02p0f);
  one = upload(contexts[0], {0x1.0028p0f});
  OK(api->virtual_all_reduce(contexts, 1, &one, 1, DPT_DTYPE_F16, error, sizeof error));
  expect_bits("1 replica, fp16", 0, download(contexts[0], one, 1)[0], 0x1.004p0f);
  for (const int32_t wire : {DPT_DTYPE_BF16, DPT_DTYPE_F16}) {
    const Case *cases = wire == DPT_DTYPE_BF16 ? kBf16Cases : kF16Cases;
    const size_t n = wire == DPT_DTYPE_BF16 ? sizeof kBf16Cases / sizeof kBf16Cases[0]
                                            : sizeof kF16Cases / sizeof kF16Cases[0];
    std::vector<float> x0, x1;
    for (size_t i = 0; i < n; ++i) x0.push_back(cases[i].x0), x1.push_back(cases[i].x1);
    float *pair[2] = {upload(contexts[0], x0), upload(contexts[1], x1)};
    OK(api->virtual_all_reduce(contexts, 2, pair, n, wire, error, sizeof error));
    for (int r = 0; r < 2; ++r) {
      const std::vector<float> got = download(contexts[r], pair[r], n);
      for (size_t i = 0; i < n; ++i) expect_bits("2 replicas, known values", i, got[i], cases[i].want);
    }
  }
  EXPECT_ERROR(DPT_BACKEND_ERROR_INVALID_ARGUMENT, "wire dtype 7",
               api->virtual_all_reduce(contexts, 3, buffers, 3, 7, error, sizeof error));
  for (dpt_backend_context *c : contexts) api->context_destroy(c);
}

// An unknown wire type (int32 tokens, a negative number) is refused before anything runs, and the
// communicator stays usable; a rank left out of a 16-bit all-reduce times out as the float32 one does.
void test_wire16_refusals_and_hang(void **) {
  TwoRanks ranks;
  float *buffers[2] = {upload(ranks.contexts[0], {1.0f, 2.0f}), upload(ranks.contexts[1], {3.0f, 4.0f})};
  const size_t counts[1] = {2};
  EXPECT_ERROR(DPT_BACKEND_ERROR_INVALID_ARGUMENT, "wire dtype 3",
               api->comm_all_reduce(ranks.comm, ranks.contexts, 1, buffers, counts, DPT_DTYPE_I32, 10.0,
                                    error, sizeof error));
  EXPECT_ERROR(
      DPT_BACKEND_ERROR_INVALID_ARGUMENT, "wire dtype -1",
      api->comm_all_reduce(ranks.comm, ranks.contexts, 1, buffers, counts, -1, 10.0, error, sizeof error));
  OK(api->comm_all_reduce(ranks.comm, ranks.contexts, 1, buffers, counts, DPT_DTYPE_BF16, 10.0, error,
                          sizeof error));
  const std::vector<float> want = {4.0f, 6.0f};
  assert_memory_equal(download(ranks.contexts[1], buffers[1], 2).data(), want.data(), sizeof(float) * 2);
  OK(test_extension()->comm_inject_hang(ranks.comm, 1, error, sizeof error));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_ERROR(DPT_BACKEND_ERROR_COMMUNICATION,
               "the 16-bit all-reduce (ncclSend/ncclRecv, ncclAllGather) did not finish within 0.3 s",
               api->comm_all_reduce(ranks.comm, ranks.contexts, 1, buffers, counts, DPT_DTYPE_F16, 0.3, error,
                                    sizeof error));
  assert_true(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= 0.3);
}

}  // namespace sim_test
