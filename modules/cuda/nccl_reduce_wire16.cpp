// comm_reduce_ranges on a 16-bit wire: each rank's part q of the vector rounded to the type into region q of
// its staging (K regions of `stride` values, stride the longest part rounded up to kWireChunkAlign), every
// region sent to its owner and every peer's copy of the rank's own part received into the rank's K slots
// (ncclSend/ncclRecv in one group), the slots summed in rank order in float32 from +0 and rounded (the
// 16-bit all-reduce's rule and kernels, wire16.cu), the sum widened into the receive buffer.
#include <nccl.h>

#include <algorithm>
#include <cstdio>

#include "cuda/context.hpp"
#include "cuda/nccl_wire16.hpp"
#include "cuda/wire16.hpp"

namespace dpt::cuda {

int enqueue_reduce_ranges_wire16(dpt_backend_comm &c, dpt_backend_context *const *contexts,
                                 const float *const *sends, float *const *recvs, const size_t *bounds,
                                 int32_t wire, StreamOf on, const Error &e) {
  const char *ranks = c.ranks.c_str();
  const size_t n = c.comms.size(), k = size_t(c.world);
  size_t stride = 0;
  for (size_t q = 0; q < k; ++q) stride = std::max(stride, bounds[q + 1] - bounds[q]);
  stride = (stride + kWireChunkAlign - 1) / kWireChunkAlign * kWireChunkAlign;
  if (stride == 0) return 0;  // every part empty
  if (stride > (SIZE_MAX >> 4) / k)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: comm_reduce_ranges: parts of %zu floats", ranks,
                  stride);
  if (const int rc = ensure_wire16_staging(c, 2 * k * stride, e)) return rc;
  const ncclDataType_t type = wire == DPT_DTYPE_BF16 ? ncclBfloat16 : ncclHalf;
  auto length = [&](size_t q) { return bounds[q + 1] - bounds[q]; };
  auto skipped = [&](size_t r) { return int(r) == c.hang_rank; };
  auto kernels_failed = [&](size_t r, const char *kernel, cudaError_t status) {
    char call[96];
    std::snprintf(call, sizeof call, "comm_reduce_ranges: %s launch", kernel);
    const int rc = cuda_failed(e, c.ordinals[r], call, status);
    abort_all(c);
    return rc;
  };
  for (size_t r = 0; r < n; ++r) {
    if (skipped(r)) continue;
    DeviceGuard guard(c.ordinals[r]);
    for (size_t q = 0; q < k; ++q) {
      if (length(q) == 0) continue;
      const cudaError_t s = launch_to_wire16(wire, sends[r] + bounds[q], length(q), 1, length(q),
                                             c.staging[r] + q * stride, stride, 0, contexts[r]->*on);
      if (s != cudaSuccess) return kernels_failed(r, "16-bit conversion kernel", s);
    }
  }
  ncclResult_t status = ncclGroupStart();
  if (status != ncclSuccess) return nccl_failed(e, ranks, "ncclGroupStart", status, nullptr);
  for (size_t r = 0; r < n && status == ncclSuccess; ++r) {
    if (skipped(r)) continue;
    uint16_t *regions = c.staging[r], *slots = regions + k * stride;
    const size_t me = size_t(c.first_rank) + r;
    for (size_t q = 0; q < k && status == ncclSuccess; ++q) {
      if (length(q) > 0)
        status = ncclSend(regions + q * stride, length(q), type, int(q), c.comms[r], contexts[r]->*on);
      if (status == ncclSuccess && length(me) > 0)
        status = ncclRecv(slots + q * stride, length(me), type, int(q), c.comms[r], contexts[r]->*on);
    }
  }
  const ncclResult_t end = ncclGroupEnd();  // always closes the group, also after a failed call
  if (status == ncclSuccess) status = end;
  if (status != ncclSuccess) {
    const int rc = nccl_failed(e, ranks, "ncclSend/ncclRecv (16-bit reduce of ranges)", status, nullptr);
    abort_all(c);
    return rc;
  }
  for (size_t r = 0; r < n; ++r) {
    const size_t me = size_t(c.first_rank) + r;
    if (skipped(r) || length(me) == 0) continue;
    DeviceGuard guard(c.ordinals[r]);
    uint16_t *regions = c.staging[r], *slots = regions + k * stride;
    cudaError_t s =
        launch_sum_wire16(wire, slots, k, stride, length(me), regions + me * stride, contexts[r]->*on);
    if (s != cudaSuccess) return kernels_failed(r, "16-bit sum kernel", s);
    s = launch_from_wire16(wire, regions + me * stride, stride, 0, length(me), recvs[r], length(me),
                           contexts[r]->*on);
    if (s != cudaSuccess) return kernels_failed(r, "16-bit conversion kernel", s);
  }
  return 0;
}

}  // namespace dpt::cuda
