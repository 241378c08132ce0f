// The 16-bit all-reduce over a NCCL communicator (backend interface: comm_all_reduce with wire_dtype
// DPT_DTYPE_BF16 or DPT_DTYPE_F16): every rank's buffers rounded to the type into its staging, an all-to-all
// of the chunks (ncclSend/ncclRecv to and from every rank, itself included, in one group), each rank's chunk
// summed over the ranks in rank order in float32 and rounded (wire16.cu), an in-place ncclAllGather of the
// sums, the result back into the float32 buffers. Ranks are global, so a comm_create_multi communicator
// (several processes) gives every process the same bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/nccl_state.hpp"

namespace dpt::cuda {

// Where the buffers of a 16-bit all-reduce live in a rank's staging (wire16.hpp): buffer b's chunks are
// length[b] values long, at offset[b] in each of the K regions of stride values; 2 K stride values in all
// (the K regions, then the K slots received).
struct WirePlan {
  std::vector<size_t> length, offset;
  size_t stride = 0;
};
// The plan of comm_all_reduce's buffers (DPT_BACKEND_ERROR_INVALID_ARGUMENT for sizes that overflow).
int plan_wire(const dpt_backend_comm &c, size_t buffer_count, const size_t *counts, WirePlan &plan,
              const Error &e);
// The planned sequence on each rank's stream `on`, its staging taken from value `base` on (the rank
// c.hang_rank left out); no completion event. A failed launch or NCCL call aborts the communicator.
int enqueue_planned(dpt_backend_comm &c, dpt_backend_context *const *contexts, size_t buffer_count,
                    float *const *buffers, const size_t *counts, int32_t wire, const WirePlan &plan,
                    size_t base, StreamOf on, const Error &e);

// Enqueues the sequence on the ranks' streams and their completion events (nccl_comm.cpp's wait follows);
// the rank c.hang_rank is left out. Staging memory that cannot be had is DPT_BACKEND_ERROR_OUT_OF_MEMORY
// with nothing enqueued and the communicator intact; a failed launch or NCCL call aborts it.
int enqueue_wire16(dpt_backend_comm &c, dpt_backend_context *const *contexts, size_t buffer_count,
                   float *const *buffers, const size_t *counts, int32_t wire, const Error &e);
// Grows every local rank's staging to at least `values` 16-bit values (DPT_BACKEND_ERROR_OUT_OF_MEMORY with
// nothing changed but the ranks already grown; DPT_BACKEND_ERROR_INVALID_ARGUMENT while started collectives
// hold it).
int ensure_wire16_staging(dpt_backend_comm &c, size_t values, const Error &e);
// The 16-bit reduce of a vector's uneven parts to their owners (comm_reduce_ranges; nccl_reduce.cpp): each
// rank's part q rounded into region q of its staging, sent to rank q (ncclSend/ncclRecv, one group), the
// owner's K received copies summed in rank order in float32 and rounded (wire16.cu), then widened into its
// receive buffer; on each rank's stream `on`, no completion event. Failures as enqueue_wire16's.
int enqueue_reduce_ranges_wire16(dpt_backend_comm &c, dpt_backend_context *const *contexts,
                                 const float *const *sends, float *const *recvs, const size_t *bounds,
                                 int32_t wire, StreamOf on, const Error &e);
// Frees every rank's staging (comm_destroy).
void free_wire16_staging(dpt_backend_comm &c);

}  // namespace dpt::cuda
