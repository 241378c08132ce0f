// The 16-bit all-reduce over a NCCL communicator (backend interface: comm_all_reduce with wire_dtype
// DPT_DTYPE_BF16 or DPT_DTYPE_F16): every rank's buffers rounded to the type into its staging, an all-to-all
// of the chunks (ncclSend/ncclRecv to and from every rank, itself included, in one group), each rank's chunk
// summed over the ranks in rank order in float32 and rounded (wire16.cu), an in-place ncclAllGather of the
// sums, the result back into the float32 buffers. Ranks are global, so a comm_create_multi communicator
// (several processes) gives every process the same bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/nccl_state.hpp"

namespace dpt::cuda {

// Enqueues the sequence on the ranks' streams and their completion events (nccl_comm.cpp's wait follows);
// the rank c.hang_rank is left out. Staging memory that cannot be had is DPT_BACKEND_ERROR_OUT_OF_MEMORY
// with nothing enqueued and the communicator intact; a failed launch or NCCL call aborts it.
int enqueue_wire16(dpt_backend_comm &c, dpt_backend_context *const *contexts, size_t buffer_count,
                   float *const *buffers, const size_t *counts, int32_t wire, const Error &e);
// Frees every rank's staging (comm_destroy).
void free_wire16_staging(dpt_backend_comm &c);

}  // namespace dpt::cuda
