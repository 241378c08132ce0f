// Device helpers of the module's own op kernels (ops/*.cu): the grid of a grid-stride loop, and sums in a
// fixed order. Every reduction here has a shape that depends on the sizes of the call only (never on the
// GPU, the grid or timing) and uses no atomics, so the same inputs give the same bits on every run and on
// every replica. The files that include this are compiled with --fmad=false (modules/cuda/CMakeLists.txt):
// every multiplication and addition is rounded on its own, as in the CPU reference kernels
// (-ffp-contract=off), so that where the CPU and the GPU evaluate the same expression in the same order they
// get the same bits.
#pragma once

#include <cstddef>

namespace dpt::cuda {

inline constexpr int kOpThreads = 256;
inline constexpr int kWarp = 32;

// Blocks of kOpThreads for a grid-stride loop over total elements: enough to fill any GPU, few enough to
// launch cheaply. (Where a block reduces one row or channel, the grid only decides which block takes it.)
inline unsigned grid_for(size_t total, size_t per_block = kOpThreads, size_t most = 4096) {
  const size_t blocks = (total + per_block - 1) / per_block;
  return unsigned(blocks == 0 ? 1 : (blocks < most ? blocks : most));
}

// Grid-stride loops that divide their index (to find a row, a channel) index with 32-bit integers where the
// elements allow: a 64-bit division costs several times a 32-bit one. (Below 2^31 the index plus any grid's
// stride still fits.)
inline bool index_fits_32(size_t total) {
  return total < (size_t(1) << 31);
}

// The sum of every thread's v over the block (blockDim.x a power of two, at most kOpThreads), returned to
// every thread: the threads' values added in a fixed tree (t += t + half, half = blockDim.x / 2 ... 1).
// part: kOpThreads doubles of shared memory, free again when this returns. Every thread must call it.
__device__ inline double block_sum(double v, double *part) {
  const unsigned t = threadIdx.x;
  part[t] = v;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (t < half) part[t] = part[t] + part[t + half];
    __syncthreads();
  }
  const double total = part[0];
  __syncthreads();
  return total;
}

// The sum of the 32 lanes' v, in every lane: a butterfly of fixed shape. Each step adds two lanes' values,
// and addition commutes bit for bit, so every lane ends with the same bits.
__device__ inline double warp_sum(double v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v = v + __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

}  // namespace dpt::cuda
