// Shared pieces of the CUDA module's conformance tests: the module through the core's loader (or a cmocka
// skip), a context on a GPU with device buffers made from host vectors, seeded random data, and comparisons
// with stated tolerances that print the worst element.
//
// Every case that needs a GPU starts with module_or_skip() and gpu_count_or_skip() (or a Gpu, which calls
// both): without the module or a GPU it is reported SKIPPED, never passed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "interface/backend_interface.h"
#include "interface/op_call.h"

namespace cuda_test {

// Call first in main: points the loader at the module's build directory (the core is linked into the test,
// so "next to libdptrain" would be bin/) and applies --only PATTERN or --skip PATTERN (CTest runs the GPU
// cases as their own test). False on bad arguments (usage printed).
bool start(int argc, char **argv);

// The module as the core loads it; skips the case when it is unavailable.
const dpt_backend_v2 &module_or_skip();
// The number of GPUs; skips the case when there is none.
int gpu_count_or_skip(const dpt_backend_v2 &api);
// The module's test extension (self_test, comm_inject_hang); fails the case when the module has none.
const dpt_backend_test_v1 &test_extension(const dpt_backend_v2 &api);
// Fails the case with the module's one-line error when rc is not 0.
void check(int rc, const char *call, const char *error);

// An F32 tensor of the given dims (one sample's, or a parameter's whole shape) at data.
dpt_tensor tensor(const void *data, const std::vector<int64_t> &dims);
// A call of op over n samples with one input, its ints, and nothing else set (tensors absent, pointers NULL).
dpt_op_call op_call(const char *op, int64_t n, const std::vector<int64_t> &ints);

// A context on one GPU for one case; its destruction frees every buffer allocated through it.
class Gpu {
 public:
  explicit Gpu(uint32_t flags = 0, int ordinal = 0);
  ~Gpu();
  Gpu(const Gpu &) = delete;
  Gpu &operator=(const Gpu &) = delete;

  const dpt_backend_v2 &api() const { return *api_; }
  dpt_backend_context *ctx() const { return ctx_; }
  int ordinal() const { return ordinal_; }

  void *alloc(size_t bytes);
  float *upload(const std::vector<float> &host);
  int32_t *upload(const std::vector<int32_t> &host);
  // Copies back after synchronizing the stream.
  std::vector<float> download(const float *device, size_t count);
  void download_bytes(void *host, const void *device, size_t bytes);
  void sync();

  char error[512] = "";  // the last call's message, for check()

 private:
  const dpt_backend_v2 *api_ = nullptr;
  dpt_backend_context *ctx_ = nullptr;
  int ordinal_ = 0;
};

// count floats uniform in [lo, hi), a pure function of seed.
std::vector<float> uniform(size_t count, uint64_t seed, float lo, float hi);
// count integers uniform in [lo, hi], as floats (exact sums for the all-reduce tests).
std::vector<float> integers(size_t count, uint64_t seed, int lo, int hi);

// Passes when |got[i] - want[i]| <= rel * scale[i] + abs for every i (scale NULL: |want[i]|); prints the
// largest error relative to its bound, and fails naming the first element outside it.
void expect_close(const char *what, const std::vector<float> &got, const std::vector<float> &want,
                  const std::vector<float> *scale, double rel, double abs);
// Passes when got and want are the same bits.
void expect_bitwise(const char *what, const std::vector<float> &got, const std::vector<float> &want);

}  // namespace cuda_test
