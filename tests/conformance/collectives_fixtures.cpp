#include "collectives_fixtures.hpp"

#include <cmath>

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

// Fractions for a 16-bit wire: uniform in (-1, 1) times 2^e, e cycling through -30 .. 9 (float16 flushes the
// lowest to zero and keeps 2^-24 .. 2^-14 as subnormals), every 97th value a float32 subnormal (bfloat16
// takes it to zero). Sums stay far below float16's 65504: no infinity, no NaN, whose payload bits the rule
// does not pin.
std::vector<float> wire_data(size_t count, uint64_t seed) {
  std::vector<float> v = cuda_test::uniform(count, seed, -1.0f, 1.0f);
  for (size_t i = 0; i < count; ++i)
    v[i] = i % 97 == 3 ? v[i] * 0x1p-130f : std::ldexp(v[i], int(i % 40) - 30);
  return v;
}

// The rule of a 16-bit wire (backend_interface.h) for values[0 .. K) in rank order.
float wire_rule(int32_t wire, const std::vector<float> &values) {
  auto round = [wire](float x) {
    return wire == DPT_DTYPE_BF16 ? dpt::round_to_bf16(x) : dpt::round_to_f16(x);
  };
  float s = 0.0f;
  for (const float v : values) s += round(v);
  return round(s);
}

// The rule over ranks for every element: want[i] = wire_rule(inputs[0][i], inputs[1][i], ...).
std::vector<float> wire_reference(int32_t wire, const std::vector<std::vector<float>> &inputs) {
  std::vector<float> want(inputs[0].size()), column(inputs.size());
  for (size_t i = 0; i < want.size(); ++i) {
    for (size_t r = 0; r < inputs.size(); ++r) column[r] = inputs[r][i];
    want[i] = wire_rule(wire, column);
  }
  return want;
}

const char *wire_name(int32_t wire) {
  return wire == DPT_DTYPE_BF16 ? "bf16" : wire == DPT_DTYPE_F16 ? "fp16" : "fp32";
}

// Every rank's kBuffers buffers of 16-bit-wire data (wire_data, seeds from `seed`), on the host and on the
// ranks' GPUs (buffers[r * kBuffers + b]).
void upload_wire_data(Ranks &ranks, int32_t wire, uint64_t seed, HostBuffers &host,
                      std::vector<float *> &buffers) {
  const size_t k = ranks.contexts.size();
  host.assign(k, std::vector<std::vector<float>>(kBuffers));
  buffers.assign(k * kBuffers, nullptr);
  for (size_t r = 0; r < k; ++r)
    for (size_t b = 0; b < kBuffers; ++b) {
      host[r][b] = wire_data(kCounts[b], seed + uint64_t(wire) * 100 + 10 * r + b);
      buffers[r * kBuffers + b] = ranks.upload(r, host[r][b]);
    }
}

// Every rank's buffers 0 .. used - 1 hold the wire's rule over the ranks' host values, bit for bit; the
// host values become those sums.
void expect_rule_sums(Ranks &ranks, int32_t wire, const std::vector<float *> &buffers, size_t used,
                      HostBuffers &host, const std::string &what) {
  const size_t k = host.size();
  for (size_t b = 0; b < used; ++b) {
    std::vector<std::vector<float>> inputs;
    for (size_t r = 0; r < k; ++r) inputs.push_back(host[r][b]);
    const std::vector<float> want = wire_reference(wire, inputs);
    for (size_t r = 0; r < k; ++r) {
      const std::string name = what + " " + wire_name(wire) + ", rank " + std::to_string(r) + ", buffer of " +
                               std::to_string(kCounts[b]);
      expect_bitwise(name.c_str(), ranks.download(r, buffers[r * kBuffers + b], kCounts[b]), want);
      host[r][b] = want;
    }
  }
}

std::vector<size_t> uneven_bounds(size_t n, size_t ranks) {
  std::vector<size_t> bounds = {0};
  for (size_t q = 1; q < ranks; ++q) bounds.push_back(n * q * q / (ranks * ranks));
  bounds.push_back(n);
  if (ranks > 2) bounds[ranks - 1] = n;  // the last rank owns nothing
  return bounds;
}

}  // namespace collectives_test
