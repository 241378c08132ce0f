// Each replica has its own context (stream) on the same GPU. The sum runs on replica 0's stream after an
// event of every other replica's stream (their gradients are complete), and every other stream waits for an
// event recorded after it (nothing of theirs reads or writes the buffers before the sum is in place).
// A 16-bit wire rounds each replica's value as the kernel reads it and the sum before it writes it
// (float16.cuh): the bits of the NCCL path's 16-bit all-reduce, with nothing to send.
#include "cuda/float16.cuh"
#include "cuda/kernels.hpp"
#include "cuda/virtual_all_reduce.hpp"

namespace dpt::cuda {

namespace {

constexpr int kThreads = 256;

struct Replicas {
  float *buffer[kMaxVirtualReplicas];
  int count;
};

// Element i: s = b0[i] + b1[i] + ... + b(K-1)[i], added in replica order, then written to every replica.
__global__ void sum_replicas_kernel(Replicas r, size_t count) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x) {
    float s = r.buffer[0][i];
    for (int k = 1; k < r.count; ++k) s = __fadd_rn(s, r.buffer[k][i]);
    for (int k = 0; k < r.count; ++k) r.buffer[k][i] = s;
  }
}

// Element i: s = ((0 + r(b0[i])) + r(b1[i])) + ... + r(b(K-1)[i]), r rounding to the wire, then r(s)
// written to every replica.
template <int Wire>
__global__ void sum_replicas_wire16_kernel(Replicas r, size_t count) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x) {
    float s = 0.0f;
    for (int k = 0; k < r.count; ++k) s = __fadd_rn(s, round_16<Wire>(r.buffer[k][i]));
    s = round_16<Wire>(s);
    for (int k = 0; k < r.count; ++k) r.buffer[k][i] = s;
  }
}

int check_arguments(dpt_backend_context *const *contexts, int replicas, float *const *buffers,
                    int32_t wire_dtype, const Error &e) {
  if (wire_dtype != DPT_DTYPE_F32 && wire_dtype != DPT_DTYPE_BF16 && wire_dtype != DPT_DTYPE_F16)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "virtual_all_reduce: wire dtype %d (DPT_DTYPE_F32, _BF16 or _F16)", int(wire_dtype));
  if (contexts == nullptr || buffers == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "virtual_all_reduce: NULL array");
  if (replicas < 1 || replicas > kMaxVirtualReplicas)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "virtual_all_reduce: %d replicas (1 .. %d)",
                  replicas, kMaxVirtualReplicas);
  for (int r = 0; r < replicas; ++r) {
    if (contexts[r] == nullptr || buffers[r] == nullptr)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "virtual_all_reduce: NULL context or buffer of replica %d", r);
    if (contexts[r]->ordinal != contexts[0]->ordinal)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "virtual_all_reduce: replica %d is on cuda:%d, replica 0 on cuda:%d (one GPU only: use "
                    "comm_all_reduce across GPUs)",
                    r, contexts[r]->ordinal, contexts[0]->ordinal);
    for (int q = 0; q < r; ++q)
      if (buffers[q] == buffers[r])
        return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                      "virtual_all_reduce: replicas %d and %d share a buffer", q, r);
  }
  return 0;
}

}  // namespace

int virtual_all_reduce(dpt_backend_context *const *contexts, int replicas, float *const *buffers,
                       size_t count, int32_t wire_dtype, char *error, size_t error_size) {
  const Error e{error, error_size};
  if (const int rc = check_arguments(contexts, replicas, buffers, wire_dtype, e)) return rc;
  if ((replicas == 1 && wire_dtype == DPT_DTYPE_F32) || count == 0) return 0;
  dpt_backend_context *const *others = contexts + 1;
  return with_context(contexts[0], e, "virtual_all_reduce", [&](dpt_backend_context &c) {
    const int ordinal = c.ordinal;
    for (int r = 0; r + 1 < replicas; ++r) {
      if (others[r]->stream == c.stream) continue;
      DPT_CUDA("cudaEventRecord", cudaEventRecord(others[r]->event, others[r]->stream));
      DPT_CUDA("cudaStreamWaitEvent", cudaStreamWaitEvent(c.stream, others[r]->event, 0));
    }
    Replicas list{};
    list.count = replicas;
    for (int r = 0; r < replicas; ++r) list.buffer[r] = buffers[r];
    const size_t blocks = (count + kThreads - 1) / kThreads;
    const unsigned grid = unsigned(blocks < 8192 ? blocks : 8192);
    if (wire_dtype == DPT_DTYPE_BF16)
      sum_replicas_wire16_kernel<DPT_DTYPE_BF16><<<grid, kThreads, 0, c.stream>>>(list, count);
    else if (wire_dtype == DPT_DTYPE_F16)
      sum_replicas_wire16_kernel<DPT_DTYPE_F16><<<grid, kThreads, 0, c.stream>>>(list, count);
    else
      sum_replicas_kernel<<<grid, kThreads, 0, c.stream>>>(list, count);
    if (const int rc = check_launch(c, "virtual_all_reduce kernel", e)) return rc;
    DPT_CUDA("cudaEventRecord", cudaEventRecord(c.event, c.stream));
    for (int r = 0; r + 1 < replicas; ++r) {
      if (others[r]->stream == c.stream) continue;
      DPT_CUDA("cudaStreamWaitEvent", cudaStreamWaitEvent(others[r]->stream, c.event, 0));
    }
    return 0;
  });
}

}  // namespace dpt::cuda
