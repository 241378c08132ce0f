// The shared part of test_sim_cuda (test_sim_cuda.cpp, test_sim_wire16.cpp, test_sim_ops.cpp): the
// simulator's table as dlopen gives it, the checking macros and small helpers.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "interface/backend_interface.h"

// CMocka last: its fail() macro would clash with std::ios::fail() in the C++ headers.
#include <setjmp.h>
#include <cstdarg>
#include <cstddef>
extern "C" {
#include <cmocka.h>
}

namespace sim_test {

inline const dpt_backend_v2 *api = nullptr;  // set by setup (test_sim_cuda.cpp)
inline char error[512];

#define OK(call)                                                     \
  do {                                                               \
    error[0] = '\0';                                                 \
    const int rc_ = (call);                                          \
    if (rc_ != 0) fail_msg("%s returned %d: %s", #call, rc_, error); \
  } while (0)

// Expects code from the call and a message containing text.
#define EXPECT_ERROR(code, text, call)                                                                   \
  do {                                                                                                   \
    error[0] = '\0';                                                                                     \
    const int rc_ = (call);                                                                              \
    print_message("%-40.40s -> %d: %s\n", #call, rc_, error);                                            \
    if (rc_ != (code)) fail_msg("%s returned %d, expected %d (%s)", #call, rc_, int(code), error);       \
    if (std::strstr(error, text) == nullptr) fail_msg("%s: '%s' does not say '%s'", #call, error, text); \
  } while (0)

inline dpt_backend_context *context(int ordinal) {
  dpt_backend_context *ctx = nullptr;
  OK(api->context_create(ordinal, nullptr, &ctx, error, sizeof error));
  return ctx;
}

inline float *alloc_floats(dpt_backend_context *ctx, size_t count) {
  void *p = nullptr;
  OK(api->mem_alloc(ctx, count * sizeof(float), &p, error, sizeof error));
  return static_cast<float *>(p);
}

inline std::vector<float> download(dpt_backend_context *ctx, const float *p, size_t count) {
  std::vector<float> host(count);
  OK(api->copy_to_host(ctx, host.data(), p, count * sizeof(float), error, sizeof error));
  OK(api->context_synchronize(ctx, error, sizeof error));
  return host;
}

// A device copy of values (synchronized: the copy reads its host source when it runs).
inline float *upload(dpt_backend_context *ctx, const std::vector<float> &values) {
  float *d = alloc_floats(ctx, values.size());
  OK(api->copy_to_device(ctx, d, values.data(), values.size() * sizeof(float), error, sizeof error));
  OK(api->context_synchronize(ctx, error, sizeof error));
  return d;
}

inline const dpt_backend_test_v1 *test_extension() {
  auto ext = static_cast<const dpt_backend_test_v1 *>(api->get_extension(DPT_BACKEND_TEST_EXTENSION));
  assert_non_null(ext);
  return ext;
}

inline dpt_tensor tensor(void *data, std::initializer_list<int64_t> dims) {
  dpt_tensor t{};
  t.data = data;
  t.dtype = DPT_DTYPE_F32;
  for (const int64_t d : dims) t.dims[t.rank++] = d;
  return t;
}

// count floats in [-1, 1), a fixed pseudo-random sequence of seed.
inline std::vector<float> pattern(size_t count, uint32_t seed) {
  std::vector<float> v(count);
  uint32_t x = seed * 2654435761u + 12345u;
  for (float &f : v) {
    x = x * 1664525u + 1013904223u;
    f = float(int32_t(x >> 8) - (1 << 23)) / float(1 << 23);
  }
  return v;
}

// A dense call of n samples: x [in] at x, weight [out, in] at w, no bias, y [out] at y.
inline dpt_op_call dense_call(int64_t n, int64_t in, int64_t out, float *x, float *w, float *y) {
  dpt_op_call c{};
  c.op = "dense";
  c.n = n;
  c.ints[0] = out;
  c.input_count = 1;
  c.inputs[0] = tensor(x, {in});
  c.output = tensor(y, {out});
  c.param_count = 1;
  c.params[0] = tensor(w, {out, in});
  return c;
}

// The 16-bit wire of the collectives (test_sim_wire16.cpp).
void test_wire16_known_values(void **);
void test_wire16_matches_rule(void **);
void test_wire16_virtual(void **);
void test_wire16_refusals_and_hang(void **);

// The op cases (test_sim_ops.cpp).
void test_ops_match_cpu_reference(void **);
void test_op_supported(void **);
void test_op_checks(void **);
void test_accumulate_and_loss(void **);

}  // namespace sim_test
