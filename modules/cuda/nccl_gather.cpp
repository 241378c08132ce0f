// comm_all_gather_ranges: a sharded optimizer's parameter gather over NCCL. Each range is broadcast from its
// owner (global rank q) to every rank in place, all ranges of all local ranks in one NCCL group, then the
// same wait as the all-reduce (nccl_comm.cpp): completion events, asynchronous errors, the deadline.
#include <nccl.h>

#include <cmath>
#include <new>

#include "cuda/context.hpp"
#include "cuda/nccl_comm.hpp"
#include "cuda/nccl_state.hpp"

namespace dpt::cuda {

namespace {

int check(const dpt_backend_comm &c, dpt_backend_context *const *contexts, float *const *buffers,
          const size_t *bounds, const Error &e) {
  const char *ranks = c.ranks.c_str();
  if (c.aborted)
    return report(
        e, DPT_BACKEND_ERROR_COMMUNICATION,
        "%s: comm_all_gather_ranges: the communicator was aborted after an earlier failure; destroy it",
        ranks);
  if (contexts == nullptr || buffers == nullptr || bounds == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: comm_all_gather_ranges: NULL array", ranks);
  for (int q = 0; q < c.world; ++q)
    if (bounds[q + 1] < bounds[q])
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "%s: comm_all_gather_ranges: bounds not ascending at rank %d", ranks, q);
  for (size_t r = 0; r < c.ordinals.size(); ++r) {
    if (contexts[r] == nullptr || buffers[r] == nullptr)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "%s: comm_all_gather_ranges: NULL context or buffer of rank %zu", ranks, r);
    if (contexts[r]->ordinal != c.ordinals[r])
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "%s: comm_all_gather_ranges: the context of rank %zu is on cuda:%d, the rank on cuda:%d",
                    ranks, r, contexts[r]->ordinal, c.ordinals[r]);
  }
  return 0;
}

int enqueue(dpt_backend_comm &c, dpt_backend_context *const *contexts, float *const *buffers,
            const size_t *bounds, const Error &e) {
  const char *ranks = c.ranks.c_str();
  ncclResult_t status = ncclGroupStart();
  if (status != ncclSuccess) return nccl_failed(e, ranks, "ncclGroupStart", status, nullptr);
  for (size_t r = 0; r < c.comms.size() && status == ncclSuccess; ++r) {
    if (int(r) == c.hang_rank) continue;
    for (int q = 0; q < c.world && status == ncclSuccess; ++q) {
      const size_t count = bounds[q + 1] - bounds[q];
      if (count == 0) continue;
      float *range = buffers[r] + bounds[q];
      status = ncclBroadcast(range, range, count, ncclFloat, q, c.comms[r], contexts[r]->stream);
    }
  }
  return end_group(c, status, "ncclBroadcast", contexts, e);
}

}  // namespace

int comm_all_gather_ranges(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                           float *const *buffers, const size_t *bounds, double timeout_seconds, char *error,
                           size_t error_size) {
  const Error e{error, error_size};
  if (comm == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "comm_all_gather_ranges: NULL communicator");
  if (const int rc = check(*comm, contexts, buffers, bounds, e)) return rc;
  return run_collective(
      *comm, contexts, "comm_all_gather_ranges", "ncclBroadcast (the ranges' gather)", timeout_seconds,
      [&] { return enqueue(*comm, contexts, buffers, bounds, e); }, e);
}

}  // namespace dpt::cuda
