// Each replica has its own context (stream) on the same GPU. The sum runs on replica 0's stream after an
// event of every other replica's stream (their gradients are complete), and every other stream waits for an
// event recorded after it (nothing of theirs reads or writes the buffers before the sum is in place).
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

int check_arguments(dpt_backend_context *const *contexts, int replicas, float *const *buffers,
                    const Error &e) {
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
                       size_t count, char *error, size_t error_size) {
  const Error e{error, error_size};
  if (const int rc = check_arguments(contexts, replicas, buffers, e)) return rc;
  if (replicas == 1 || count == 0) return 0;
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
    sum_replicas_kernel<<<unsigned(blocks < 8192 ? blocks : 8192), kThreads, 0, c.stream>>>(list, count);
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
