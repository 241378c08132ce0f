// comm_all_reduce_f64: a few doubles summed over NCCL in the middle of a pass (batch norm's per-channel
// sums). One ncclAllReduce (ncclFloat64) per local rank in one NCCL group, then the same wait as the float32
// all-reduce (nccl_comm.cpp): completion events, asynchronous errors, the deadline.
#include <nccl.h>

#include <cmath>
#include <new>

#include "cuda/context.hpp"
#include "cuda/nccl_comm.hpp"
#include "cuda/nccl_state.hpp"

namespace dpt::cuda {

namespace {

int check(const dpt_backend_comm &c, dpt_backend_context *const *contexts, double *const *buffers,
          const Error &e) {
  const char *ranks = c.ranks.c_str();
  if (c.aborted)
    return report(
        e, DPT_BACKEND_ERROR_COMMUNICATION,
        "%s: comm_all_reduce_f64: the communicator was aborted after an earlier failure; destroy it", ranks);
  if (contexts == nullptr || buffers == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: comm_all_reduce_f64: NULL array", ranks);
  for (size_t r = 0; r < c.ordinals.size(); ++r) {
    if (contexts[r] == nullptr || buffers[r] == nullptr)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "%s: comm_all_reduce_f64: NULL context or buffer of rank %zu", ranks, r);
    if (contexts[r]->ordinal != c.ordinals[r])
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "%s: comm_all_reduce_f64: the context of rank %zu is on cuda:%d, the rank on cuda:%d",
                    ranks, r, contexts[r]->ordinal, c.ordinals[r]);
  }
  return 0;
}

int enqueue(dpt_backend_comm &c, dpt_backend_context *const *contexts, double *const *buffers, size_t count,
            const Error &e) {
  const char *ranks = c.ranks.c_str();
  ncclResult_t status = ncclGroupStart();
  if (status != ncclSuccess) return nccl_failed(e, ranks, "ncclGroupStart", status, nullptr);
  for (size_t r = 0; r < c.comms.size() && status == ncclSuccess; ++r) {
    if (int(r) == c.hang_rank) continue;
    status =
        ncclAllReduce(buffers[r], buffers[r], count, ncclFloat64, ncclSum, c.comms[r], contexts[r]->stream);
  }
  return end_group(c, status, "ncclAllReduce (float64)", contexts, e);
}

}  // namespace

int comm_all_reduce_f64(dpt_backend_comm *comm, dpt_backend_context *const *contexts, double *const *buffers,
                        size_t count, double timeout_seconds, char *error, size_t error_size) {
  const Error e{error, error_size};
  if (comm == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "comm_all_reduce_f64: NULL communicator");
  if (const int rc = check(*comm, contexts, buffers, e)) return rc;
  if (count == 0) return 0;
  return run_collective(
      *comm, contexts, "comm_all_reduce_f64", "ncclAllReduce (float64)", timeout_seconds,
      [&] { return enqueue(*comm, contexts, buffers, count, e); }, e);
}

}  // namespace dpt::cuda
