// The kernels of the 16-bit NCCL all-reduce (nccl_comm.cpp; backend interface: comm_all_reduce's
// wire_dtype). A rank's staging holds K regions of S 16-bit values, one per peer p: region p holds chunk p of
// every buffer of the call (buffer b's chunk at offset o_b, L_b values long, S the sum of the L_b). So one
// ncclSend / ncclRecv per peer and one ncclAllGather carry every buffer of the call.
//
// Each launcher enqueues one kernel on the stream (the stream's device current) and returns the launch's
// status; wire is DPT_DTYPE_BF16 or DPT_DTYPE_F16 (float16.cuh: the roundings).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dpt::cuda {

// Values of a chunk are a multiple of this (16 bytes), so that every chunk starts aligned.
constexpr size_t kWireChunkAlign = 8;

// L: the chunk length of a buffer of n floats over k ranks, ceil(n / k) rounded up to kWireChunkAlign.
inline size_t wire_chunk_length(size_t n, size_t k) {
  const size_t l = (n + k - 1) / k;
  return (l + kWireChunkAlign - 1) / kWireChunkAlign * kWireChunkAlign;
}

// staging[p * stride + offset + j] = x[p * length + j] rounded to the wire, for p < parts and j < length;
// 0 where p * length + j >= n (the padding of the last chunks).
cudaError_t launch_to_wire16(int32_t wire, const float *x, size_t n, size_t parts, size_t length,
                             uint16_t *staging, size_t stride, size_t offset, cudaStream_t stream);
// out[j] = round(((0 + v(slots[j])) + v(slots[stride + j])) + ... + v(slots[(parts - 1) stride + j])) for
// j < length: the float32 sum of the parts in order (v: the 16-bit value as a float), rounded to the wire.
cudaError_t launch_sum_wire16(int32_t wire, const uint16_t *slots, size_t parts, size_t stride, size_t length,
                              uint16_t *out, cudaStream_t stream);
// x[p * length + j] = v(staging[p * stride + offset + j]) for p * length + j < n.
cudaError_t launch_from_wire16(int32_t wire, const uint16_t *staging, size_t stride, size_t offset,
                               size_t length, float *x, size_t n, cudaStream_t stream);

}  // namespace dpt::cuda
