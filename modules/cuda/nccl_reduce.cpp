// comm_reduce_ranges: a sharded gradient's bucket reduce-scattered over NCCL into uneven parts. On the
// float32 wire each part is reduced to its owner (global rank q) with one ncclReduce, every part of every
// local rank in one NCCL group (a 16-bit wire: nccl_reduce_wire16.cpp), then the same wait as the all-reduce
// (nccl_comm.cpp): completion events, asynchronous errors, the deadline.
#include <nccl.h>

#include <cmath>
#include <new>

#include "cuda/context.hpp"
#include "cuda/nccl_comm.hpp"
#include "cuda/nccl_state.hpp"
#include "cuda/nccl_wire16.hpp"

namespace dpt::cuda {

namespace {

int check(const dpt_backend_comm &c, dpt_backend_context *const *contexts, const float *const *sends,
          float *const *recvs, const size_t *bounds, const Error &e) {
  const char *ranks = c.ranks.c_str();
  if (c.aborted)
    return report(e, DPT_BACKEND_ERROR_COMMUNICATION,
                  "%s: comm_reduce_ranges: the communicator was aborted after an earlier failure; destroy it",
                  ranks);
  if (contexts == nullptr || sends == nullptr || recvs == nullptr || bounds == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: comm_reduce_ranges: NULL array", ranks);
  for (int q = 0; q < c.world; ++q)
    if (bounds[q + 1] < bounds[q])
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "%s: comm_reduce_ranges: bounds not ascending at rank %d", ranks, q);
  for (size_t r = 0; r < c.ordinals.size(); ++r) {
    const size_t q = size_t(c.first_rank) + r;
    if (contexts[r] == nullptr || (sends[r] == nullptr && bounds[c.world] > 0) ||
        (recvs[r] == nullptr && bounds[q + 1] > bounds[q]))
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "%s: comm_reduce_ranges: NULL context, send or receive buffer of rank %zu", ranks, r);
    if (contexts[r]->ordinal != c.ordinals[r])
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "%s: comm_reduce_ranges: the context of rank %zu is on cuda:%d, the rank on cuda:%d",
                    ranks, r, contexts[r]->ordinal, c.ordinals[r]);
  }
  return 0;
}

int enqueue(dpt_backend_comm &c, dpt_backend_context *const *contexts, const float *const *sends,
            float *const *recvs, const size_t *bounds, const Error &e) {
  ncclResult_t status = ncclGroupStart();
  if (status != ncclSuccess) return nccl_failed(e, c.ranks.c_str(), "ncclGroupStart", status, nullptr);
  status = queue_reduces(c, contexts, sends, recvs, bounds, &dpt_backend_context::stream);
  return end_group(c, status, "ncclReduce", contexts, e);
}

struct StartArguments {
  dpt_backend_comm *c;
  dpt_backend_context *const *contexts;
  const float *const *sends;
  float *const *recvs;
  const size_t *bounds;
};

ncclResult_t queue_started(void *arguments) {
  const StartArguments &a = *static_cast<const StartArguments *>(arguments);
  return queue_reduces(*a.c, a.contexts, a.sends, a.recvs, a.bounds, &dpt_backend_context::comm_stream);
}

}  // namespace

ncclResult_t queue_reduces(dpt_backend_comm &c, dpt_backend_context *const *contexts,
                           const float *const *sends, float *const *recvs, const size_t *bounds,
                           StreamOf on) {
  ncclResult_t status = ncclSuccess;
  for (size_t r = 0; r < c.comms.size() && status == ncclSuccess; ++r) {
    if (int(r) == c.hang_rank) continue;
    for (int q = 0; q < c.world && status == ncclSuccess; ++q) {
      const size_t count = bounds[q + 1] - bounds[q];
      if (count == 0) continue;
      // Only the root's receive buffer is written (the others' is not read: any valid pointer).
      float *recv = q == c.first_rank + int(r) ? recvs[r] : const_cast<float *>(sends[r]) + bounds[q];
      status =
          ncclReduce(sends[r] + bounds[q], recv, count, ncclFloat, ncclSum, q, c.comms[r], contexts[r]->*on);
    }
  }
  return status;
}

int comm_reduce_ranges(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                       const float *const *sends, float *const *recvs, const size_t *bounds,
                       int32_t wire_dtype, double timeout_seconds, char *error, size_t error_size) {
  const Error e{error, error_size};
  if (comm == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "comm_reduce_ranges: NULL communicator");
  if (wire_dtype != DPT_DTYPE_F32 && wire_dtype != DPT_DTYPE_BF16 && wire_dtype != DPT_DTYPE_F16)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "%s: comm_reduce_ranges: wire dtype %d (DPT_DTYPE_F32, _BF16 or _F16)", comm->ranks.c_str(),
                  int(wire_dtype));
  if (const int rc = check(*comm, contexts, sends, recvs, bounds, e)) return rc;
  const bool f32 = wire_dtype == DPT_DTYPE_F32;
  return run_collective(
      *comm, contexts, "comm_reduce_ranges",
      f32 ? "ncclReduce (the ranges' reduce)" : "the 16-bit reduce of ranges (ncclSend/ncclRecv)",
      timeout_seconds,
      [&] {
        if (f32) return enqueue(*comm, contexts, sends, recvs, bounds, e);
        if (const int rc = enqueue_reduce_ranges_wire16(*comm, contexts, sends, recvs, bounds, wire_dtype,
                                                        &dpt_backend_context::stream, e))
          return rc;
        return record_events(*comm, contexts, e);
      },
      e);
}

int comm_reduce_ranges_start(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                             const float *const *sends, float *const *recvs, const size_t *bounds,
                             int32_t wire_dtype, char *error, size_t error_size) {
  const Error e{error, error_size};
  const char *call = "comm_reduce_ranges_start";
  if (comm == nullptr) return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: NULL communicator", call);
  if (wire_dtype != DPT_DTYPE_F32 && wire_dtype != DPT_DTYPE_BF16 && wire_dtype != DPT_DTYPE_F16)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "%s: %s: wire dtype %d (DPT_DTYPE_F32, _BF16 or _F16)", comm->ranks.c_str(), call,
                  int(wire_dtype));
  if (const int rc = check(*comm, contexts, sends, recvs, bounds, e)) return rc;
  if (wire_dtype != DPT_DTYPE_F32) {  // the 16-bit sequence on the communication streams
    const auto enqueue16 = [&] {
      return enqueue_reduce_ranges_wire16(*comm, contexts, sends, recvs, bounds, wire_dtype,
                                          &dpt_backend_context::comm_stream, e);
    };
    return start_sequence(*comm, contexts, call, enqueue16, e);
  }
  StartArguments arguments{comm, contexts, sends, recvs, bounds};
  return start_collective(*comm, contexts, call, &queue_started, &arguments, e);
}

}  // namespace dpt::cuda
