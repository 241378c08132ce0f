// comm_all_reduce_start and comm_wait_started: the float32 all-reduce of gradient buckets on each context's
// communication stream, beside the compute that goes on on its stream (PyTorch DDP's bucket overlap).
//
// A start records the context's comm_ready event on its stream and makes the communication stream wait for
// it (the bucket's gradients are queued before), then enqueues one ncclAllReduce per buffer on the
// communication streams, every rank in one NCCL group, and returns. Work queued on the stream later does not
// wait for it. The wait records each rank's completion event on its communication stream, makes the
// context's stream wait for that event (what is queued later sees the sums), and polls the events as
// comm_all_reduce does (asynchronous errors, the deadline, the abort).
#include <nccl.h>

#include "cuda/context.hpp"
#include "cuda/nccl_comm.hpp"
#include "cuda/nccl_state.hpp"

namespace dpt::cuda {

namespace {

constexpr const char *kStart = "comm_all_reduce_start";

// Every rank's communication stream ordered after what its context's stream holds now.
int order_after_streams(dpt_backend_comm &c, dpt_backend_context *const *contexts, const Error &e) {
  for (size_t r = 0; r < c.ordinals.size(); ++r) {
    const int ordinal = c.ordinals[r];
    dpt_backend_context &ctx = *contexts[r];
    DeviceGuard guard(ordinal);
    cudaError_t s = cudaEventRecord(ctx.comm_ready, ctx.stream);
    if (s == cudaSuccess) s = cudaStreamWaitEvent(ctx.comm_stream, ctx.comm_ready, 0);
    if (s != cudaSuccess) {
      const int rc =
          cuda_failed(e, ordinal, "cudaEventRecord / cudaStreamWaitEvent (comm_all_reduce_start)", s);
      abort_all(c);
      return rc;
    }
  }
  return 0;
}

int enqueue_started(dpt_backend_comm &c, dpt_backend_context *const *contexts, size_t buffer_count,
                    float *const *buffers, const size_t *counts, const Error &e) {
  if (const int rc = order_after_streams(c, contexts, e)) return rc;
  ncclResult_t status = ncclGroupStart();
  if (status != ncclSuccess) return nccl_failed(e, c.ranks.c_str(), "ncclGroupStart", status, nullptr);
  for (size_t r = 0; r < c.comms.size() && status == ncclSuccess; ++r) {
    if (int(r) == c.hang_rank) continue;
    for (size_t b = 0; b < buffer_count && status == ncclSuccess; ++b) {
      if (counts[b] == 0) continue;
      float *buffer = buffers[r * buffer_count + b];
      status =
          ncclAllReduce(buffer, buffer, counts[b], ncclFloat, ncclSum, c.comms[r], contexts[r]->comm_stream);
    }
  }
  const ncclResult_t end = ncclGroupEnd();  // always closes the group, also after a failed call
  if (status == ncclSuccess) status = end;
  if (status != ncclSuccess) {
    const int rc = nccl_failed(e, c.ranks.c_str(), "ncclAllReduce (comm_all_reduce_start)", status, nullptr);
    abort_all(c);
    return rc;
  }
  c.started = true;
  return 0;
}

// Each context's stream ordered after its communication stream, whose end the completion event marks.
int join_streams(dpt_backend_comm &c, dpt_backend_context *const *contexts, const Error &e) {
  for (size_t r = 0; r < c.ordinals.size(); ++r) {
    const int ordinal = c.ordinals[r];
    dpt_backend_context &ctx = *contexts[r];
    DeviceGuard guard(ordinal);
    cudaError_t s = cudaEventRecord(ctx.event, ctx.comm_stream);
    if (s == cudaSuccess) s = cudaStreamWaitEvent(ctx.stream, ctx.event, 0);
    if (s != cudaSuccess) {
      const int rc = cuda_failed(e, ordinal, "cudaEventRecord / cudaStreamWaitEvent (comm_wait_started)", s);
      abort_all(c);
      return rc;
    }
  }
  return 0;
}

}  // namespace

int comm_all_reduce_start(dpt_backend_comm *comm, dpt_backend_context *const *contexts, size_t buffer_count,
                          float *const *buffers, const size_t *counts, int32_t wire_dtype, char *error,
                          size_t error_size) {
  const Error e{error, error_size};
  if (comm == nullptr) return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: NULL communicator", kStart);
  if (wire_dtype != DPT_DTYPE_F32)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "%s: %s: wire dtype %d (DPT_DTYPE_F32 only; a 16-bit wire: comm_all_reduce)",
                  comm->ranks.c_str(), kStart, int(wire_dtype));
  if (const int rc = check_ranks(*comm, contexts, buffer_count, buffers, counts, kStart, e)) return rc;
  if (buffer_count == 0) return 0;
  try {
    DeviceGuard guard(comm->ordinals[0]);  // restores the caller's device, whichever NCCL leaves current
    return enqueue_started(*comm, contexts, buffer_count, buffers, counts, e);
  } catch (const std::bad_alloc &) {
    return report(e, DPT_BACKEND_ERROR_OUT_OF_MEMORY, "%s: %s: out of host memory", comm->ranks.c_str(),
                  kStart);
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "%s: %s: unexpected C++ exception", comm->ranks.c_str(), kStart);
  }
}

int comm_wait_started(dpt_backend_comm *comm, dpt_backend_context *const *contexts, double timeout_seconds,
                      char *error, size_t error_size) {
  const Error e{error, error_size};
  if (comm == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "comm_wait_started: NULL communicator");
  if (const int rc = check_contexts(*comm, contexts, "comm_wait_started", e)) return rc;
  if (!comm->started) return 0;
  comm->started = false;
  return run_collective(
      *comm, contexts, "comm_wait_started", "ncclAllReduce (started)", timeout_seconds,
      [&] { return join_streams(*comm, contexts, e); }, e);
}

}  // namespace dpt::cuda
