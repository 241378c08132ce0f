// The bias kernels of dense and conv2d (ops/), launched through kernels.hpp.
#include "cuda/kernels.hpp"

namespace dpt::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void bias_add_kernel(float *y, const float *bias, size_t total, size_t channels, size_t pixels) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x)
    y[i] = __fadd_rn(y[i], bias[(i / pixels) % channels]);
}

// One block per channel. Thread t adds the elements t, t + kThreads, ... of the channel (sample-major), then
// the block adds the threads' sums in a fixed tree: the same bits on every run, no atomics.
__global__ void bias_grad_kernel(const float *dy, float *dbias, size_t n, size_t channels, size_t pixels) {
  __shared__ float partial[kThreads];
  const size_t channel = blockIdx.x;
  const size_t per_channel = n * pixels;
  float sum = 0.0f;
  for (size_t j = threadIdx.x; j < per_channel; j += kThreads) {
    const size_t sample = j / pixels, pixel = j % pixels;
    sum = __fadd_rn(sum, dy[(sample * channels + channel) * pixels + pixel]);
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half)
      partial[threadIdx.x] = __fadd_rn(partial[threadIdx.x], partial[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) dbias[channel] = __fadd_rn(dbias[channel], partial[0]);
}

// Blocks for a grid-stride loop over total elements: enough to fill any GPU, few enough to launch cheaply.
unsigned blocks_for(size_t total) {
  const size_t blocks = (total + kThreads - 1) / kThreads;
  return unsigned(blocks < 4096 ? blocks : 4096);
}

}  // namespace

int launch_bias_add(dpt_backend_context &c, size_t n, size_t channels, size_t pixels, const float *bias,
                    float *y, const Error &e) {
  const size_t total = n * channels * pixels;
  if (total == 0) return 0;
  bias_add_kernel<<<blocks_for(total), kThreads, 0, c.stream>>>(y, bias, total, channels, pixels);
  return check_launch(c, "bias_add_kernel", e);
}

int launch_bias_grad(dpt_backend_context &c, size_t n, size_t channels, size_t pixels, const float *dy,
                     float *dbias, const Error &e) {
  if (n == 0 || channels == 0) return 0;
  bias_grad_kernel<<<unsigned(channels), kThreads, 0, c.stream>>>(dy, dbias, n, channels, pixels);
  return check_launch(c, "bias_grad_kernel", e);
}

}  // namespace dpt::cuda
