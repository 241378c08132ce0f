// One explicitly rounded addition per element (__fadd_rn), as the CPU's dpt::cpu::accumulate: the same bits.
#include "cuda/accumulate.hpp"
#include "cuda/kernels.hpp"

namespace dpt::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void accumulate_kernel(float *y, const float *x, size_t count) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x)
    y[i] = __fadd_rn(y[i], x[i]);
}

unsigned blocks_for(size_t count) {
  const size_t blocks = (count + kThreads - 1) / kThreads;
  return unsigned(blocks < 8192 ? blocks : 8192);
}

}  // namespace

int accumulate(dpt_backend_context *ctx, float *y, const float *x, size_t count, char *error,
               size_t error_size) {
  const Error e{error, error_size};
  return with_context(ctx, e, "accumulate", [&](dpt_backend_context &c) {
    if (count == 0) return 0;
    if (y == nullptr || x == nullptr)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "cuda:%d: accumulate: NULL pointer", c.ordinal);
    accumulate_kernel<<<blocks_for(count), kThreads, 0, c.stream>>>(y, x, count);
    return check_launch(c, "accumulate kernel", e);
  });
}

}  // namespace dpt::cuda
