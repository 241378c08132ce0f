// The conversion and sum kernels of the 16-bit NCCL all-reduce (wire16.hpp). Grid-stride loops over the
// values of one chunk; a thread handles the same position j in every chunk, so that neighbouring threads
// read and write neighbouring values.
#include "cuda/float16.cuh"
#include "cuda/wire16.hpp"

namespace dpt::cuda {

namespace {

constexpr int kThreads = 256;

unsigned blocks_for(size_t count) {
  const size_t blocks = (count + kThreads - 1) / kThreads;
  return unsigned(blocks < 8192 ? (blocks > 0 ? blocks : 1) : 8192);
}

template <int Wire>
__global__ void to_wire_kernel(const float *x, size_t n, size_t parts, size_t length, uint16_t *staging,
                               size_t stride, size_t offset) {
  for (size_t j = size_t(blockIdx.x) * blockDim.x + threadIdx.x; j < length;
       j += size_t(gridDim.x) * blockDim.x)
    for (size_t p = 0; p < parts; ++p) {
      const size_t i = p * length + j;
      staging[p * stride + offset + j] = i < n ? to_16<Wire>(x[i]) : uint16_t(0);
    }
}

template <int Wire>
__global__ void sum_kernel(const uint16_t *slots, size_t parts, size_t stride, size_t length, uint16_t *out) {
  for (size_t j = size_t(blockIdx.x) * blockDim.x + threadIdx.x; j < length;
       j += size_t(gridDim.x) * blockDim.x) {
    float s = 0.0f;
    for (size_t p = 0; p < parts; ++p) s = __fadd_rn(s, from_16<Wire>(slots[p * stride + j]));
    out[j] = to_16<Wire>(s);
  }
}

template <int Wire>
__global__ void from_wire_kernel(const uint16_t *staging, size_t stride, size_t offset, size_t length,
                                 float *x, size_t n) {
  const size_t parts = (n + length - 1) / length;
  for (size_t j = size_t(blockIdx.x) * blockDim.x + threadIdx.x; j < length;
       j += size_t(gridDim.x) * blockDim.x)
    for (size_t p = 0; p < parts; ++p) {
      const size_t i = p * length + j;
      if (i < n) x[i] = from_16<Wire>(staging[p * stride + offset + j]);
    }
}

}  // namespace

cudaError_t launch_to_wire16(int32_t wire, const float *x, size_t n, size_t parts, size_t length,
                             uint16_t *staging, size_t stride, size_t offset, cudaStream_t stream) {
  if (wire == DPT_DTYPE_BF16)
    to_wire_kernel<DPT_DTYPE_BF16>
        <<<blocks_for(length), kThreads, 0, stream>>>(x, n, parts, length, staging, stride, offset);
  else
    to_wire_kernel<DPT_DTYPE_F16>
        <<<blocks_for(length), kThreads, 0, stream>>>(x, n, parts, length, staging, stride, offset);
  return cudaGetLastError();
}

cudaError_t launch_sum_wire16(int32_t wire, const uint16_t *slots, size_t parts, size_t stride, size_t length,
                              uint16_t *out, cudaStream_t stream) {
  if (wire == DPT_DTYPE_BF16)
    sum_kernel<DPT_DTYPE_BF16>
        <<<blocks_for(length), kThreads, 0, stream>>>(slots, parts, stride, length, out);
  else
    sum_kernel<DPT_DTYPE_F16><<<blocks_for(length), kThreads, 0, stream>>>(slots, parts, stride, length, out);
  return cudaGetLastError();
}

cudaError_t launch_from_wire16(int32_t wire, const uint16_t *staging, size_t stride, size_t offset,
                               size_t length, float *x, size_t n, cudaStream_t stream) {
  if (wire == DPT_DTYPE_BF16)
    from_wire_kernel<DPT_DTYPE_BF16>
        <<<blocks_for(length), kThreads, 0, stream>>>(staging, stride, offset, length, x, n);
  else
    from_wire_kernel<DPT_DTYPE_F16>
        <<<blocks_for(length), kThreads, 0, stream>>>(staging, stride, offset, length, x, n);
  return cudaGetLastError();
}

}  // namespace dpt::cuda
