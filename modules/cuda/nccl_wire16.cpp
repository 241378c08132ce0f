#include "cuda/nccl_wire16.hpp"

#include <cstdint>
#include <cstdio>
#include <vector>

#include "cuda/context.hpp"
#include "cuda/wire16.hpp"

namespace dpt::cuda {

int plan_wire(const dpt_backend_comm &c, size_t buffer_count, const size_t *counts, WirePlan &plan,
              const Error &e) {
  const size_t k = size_t(c.world);
  plan.length.assign(buffer_count, 0);
  plan.offset.assign(buffer_count, 0);
  plan.stride = 0;
  for (size_t b = 0; b < buffer_count; ++b) {
    // 2 K L 16-bit values per rank: bounded well below SIZE_MAX for any buffer that fits in memory.
    if (counts[b] > (SIZE_MAX >> 4) - k * kWireChunkAlign)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: comm_all_reduce: buffer %zu of %zu floats",
                    c.ranks.c_str(), b, counts[b]);
    if (counts[b] == 0) continue;
    plan.length[b] = wire_chunk_length(counts[b], k);
    plan.offset[b] = plan.stride;
    plan.stride += plan.length[b];
  }
  if (plan.stride > (SIZE_MAX >> 4) / k)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: comm_all_reduce: %zu buffers too large",
                  c.ranks.c_str(), buffer_count);
  return 0;
}

// Every local rank's staging holds at least `values` 16-bit values. Nothing is in flight (every collective
// waits until done, and an aborted communicator does none; a started one holds the staging until the wait,
// so growing it then is refused), so the old memory is freed at once.
int ensure_wire16_staging(dpt_backend_comm &c, size_t values, const Error &e) {
  c.staging.resize(c.ordinals.size(), nullptr);
  c.staging_capacity.resize(c.ordinals.size(), 0);
  for (size_t r = 0; r < c.ordinals.size(); ++r) {
    if (c.staging_capacity[r] >= values) continue;
    if (c.started > 0)
      return report(
          e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
          "%s: the 16-bit staging (%zu values) is too small for %zu while started collectives "
          "use it: a 16-bit comm_all_reduce of the window's buffers before the first start sizes it",
          c.ranks.c_str(), c.staging_capacity[r], values);
    const int ordinal = c.ordinals[r];
    DeviceGuard guard(ordinal);
    if (c.staging[r] != nullptr) cudaFree(c.staging[r]);
    c.staging[r] = nullptr;
    c.staging_capacity[r] = 0;
    void *memory = nullptr;
    const cudaError_t status = cudaMalloc(&memory, values * sizeof(uint16_t));
    if (status != cudaSuccess) {
      char call[128];
      std::snprintf(call, sizeof call, "cudaMalloc(%zu bytes of 16-bit staging)", values * sizeof(uint16_t));
      return cuda_failed(e, ordinal, call, status);
    }
    c.staging[r] = static_cast<uint16_t *>(memory);
    c.staging_capacity[r] = values;
  }
  return 0;
}

// Every buffer rounded into the rank's wire regions; in one group, region p sent to rank p and rank p's
// region received into slot p; the sum of the slots in rank order, rounded, into the rank's own region;
// in one group, an in-place ncclAllGather of the own regions; the wire back into the buffers.
int enqueue_planned(dpt_backend_comm &c, dpt_backend_context *const *contexts, size_t buffer_count,
                    float *const *buffers, const size_t *counts, int32_t wire, const WirePlan &plan,
                    size_t base, StreamOf on, const Error &e) {
  const char *ranks = c.ranks.c_str();
  const size_t n = c.comms.size(), k = size_t(c.world), stride = plan.stride;
  const ncclDataType_t type = wire == DPT_DTYPE_BF16 ? ncclBfloat16 : ncclHalf;
  auto skipped = [&](size_t r) { return int(r) == c.hang_rank; };
  auto kernels_failed = [&](size_t r, const char *kernel, cudaError_t status) {
    char call[96];
    std::snprintf(call, sizeof call, "comm_all_reduce: %s launch", kernel);
    const int rc = cuda_failed(e, c.ordinals[r], call, status);
    abort_all(c);
    return rc;
  };
  for (size_t r = 0; r < n; ++r) {
    if (skipped(r)) continue;
    DeviceGuard guard(c.ordinals[r]);
    for (size_t b = 0; b < buffer_count; ++b) {
      if (counts[b] == 0) continue;
      const cudaError_t s =
          launch_to_wire16(wire, buffers[r * buffer_count + b], counts[b], k, plan.length[b],
                           (c.staging[r] + base), stride, plan.offset[b], contexts[r]->*on);
      if (s != cudaSuccess) return kernels_failed(r, "16-bit conversion kernel", s);
    }
  }
  // The all-to-all: ncclSend and ncclRecv of every peer (itself included) in one group.
  ncclResult_t status = ncclGroupStart();
  if (status != ncclSuccess) return nccl_failed(e, ranks, "ncclGroupStart", status, nullptr);
  for (size_t r = 0; r < n && status == ncclSuccess; ++r) {
    if (skipped(r)) continue;
    uint16_t *regions = (c.staging[r] + base), *slots = regions + k * stride;
    for (size_t p = 0; p < k && status == ncclSuccess; ++p) {
      status = ncclSend(regions + p * stride, stride, type, int(p), c.comms[r], contexts[r]->*on);
      if (status == ncclSuccess)
        status = ncclRecv(slots + p * stride, stride, type, int(p), c.comms[r], contexts[r]->*on);
    }
  }
  ncclResult_t end = ncclGroupEnd();  // always closes the group, also after a failed call
  if (status == ncclSuccess) status = end;
  if (status != ncclSuccess) {
    const int rc = nccl_failed(e, ranks, "ncclSend/ncclRecv (16-bit all-reduce)", status, nullptr);
    abort_all(c);
    return rc;
  }
  for (size_t r = 0; r < n; ++r) {
    if (skipped(r)) continue;
    DeviceGuard guard(c.ordinals[r]);
    uint16_t *regions = (c.staging[r] + base), *slots = regions + k * stride;
    const size_t me = size_t(c.first_rank) + r;
    const cudaError_t s =
        launch_sum_wire16(wire, slots, k, stride, stride, regions + me * stride, contexts[r]->*on);
    if (s != cudaSuccess) return kernels_failed(r, "16-bit sum kernel", s);
  }
  status = ncclGroupStart();
  if (status != ncclSuccess) {
    const int rc = nccl_failed(e, ranks, "ncclGroupStart", status, nullptr);
    abort_all(c);  // the first half is in flight
    return rc;
  }
  for (size_t r = 0; r < n && status == ncclSuccess; ++r) {
    if (skipped(r)) continue;
    uint16_t *regions = (c.staging[r] + base);
    const size_t me = size_t(c.first_rank) + r;
    status = ncclAllGather(regions + me * stride, regions, stride, type, c.comms[r], contexts[r]->*on);
  }
  end = ncclGroupEnd();
  if (status == ncclSuccess) status = end;
  if (status != ncclSuccess) {
    const int rc = nccl_failed(e, ranks, "ncclAllGather (16-bit all-reduce)", status, nullptr);
    abort_all(c);
    return rc;
  }
  for (size_t r = 0; r < n; ++r) {
    if (skipped(r)) continue;
    DeviceGuard guard(c.ordinals[r]);
    for (size_t b = 0; b < buffer_count; ++b) {
      if (counts[b] == 0) continue;
      const cudaError_t s =
          launch_from_wire16(wire, (c.staging[r] + base), stride, plan.offset[b], plan.length[b],
                             buffers[r * buffer_count + b], counts[b], contexts[r]->*on);
      if (s != cudaSuccess) return kernels_failed(r, "16-bit conversion kernel", s);
    }
  }
  return 0;
}

int enqueue_wire16(dpt_backend_comm &c, dpt_backend_context *const *contexts, size_t buffer_count,
                   float *const *buffers, const size_t *counts, int32_t wire, const Error &e) {
  WirePlan plan;
  if (const int rc = plan_wire(c, buffer_count, counts, plan, e)) return rc;
  if (plan.stride == 0) return record_events(c, contexts, e);  // every buffer empty
  if (const int rc = ensure_wire16_staging(c, 2 * size_t(c.world) * plan.stride, e)) return rc;
  if (const int rc = enqueue_planned(c, contexts, buffer_count, buffers, counts, wire, plan, 0,
                                     &dpt_backend_context::stream, e))
    return rc;
  return record_events(c, contexts, e);
}

void free_wire16_staging(dpt_backend_comm &c) {
  for (size_t r = 0; r < c.staging.size(); ++r) {
    if (c.staging[r] == nullptr) continue;
    DeviceGuard guard(c.ordinals[r]);
    cudaFree(c.staging[r]);
    c.staging[r] = nullptr;
    c.staging_capacity[r] = 0;
  }
}

}  // namespace dpt::cuda
