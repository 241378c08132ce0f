// Collectives started beside the compute (comm_all_reduce_start, comm_reduce_ranges_start), and their ends
// (comm_join_started, comm_wait_started): a gradient bucket reduced on each context's communication stream
// while the compute goes on on its stream (PyTorch DDP's bucket overlap).
//
// A start records the context's comm_ready event on its stream and makes the communication stream wait for
// it (the bucket's gradients are queued before), enqueues its NCCL calls on the communication streams,
// every rank in one NCCL group (a 16-bit all-reduce: comm_all_reduce's conversions, all-to-all, sums and
// all-gather in the communicator's staging), records the start's own event on each communication stream,
// and returns.
// Work queued on the stream later does not wait for it. A join makes each context's stream wait for the
// event of an earlier start (device-side only). The wait records each rank's completion event on its
// communication stream, makes the context's stream wait for that event (what is queued later sees the
// results), and polls the events as comm_all_reduce does (asynchronous errors, the deadline, the abort).
#include <nccl.h>

#include <cstdio>

#include "cuda/context.hpp"
#include "cuda/nccl_comm.hpp"
#include "cuda/nccl_state.hpp"
#include "cuda/nccl_wire16.hpp"

namespace dpt::cuda {

namespace {

using EventOf = cudaEvent_t dpt_backend_context::*;

// A CUDA call on rank's GPU failed while starts are queued: reported as `cuda_call (call detail)`, and
// the communicator aborted, since the other ranks' parts of the collective may be queued already.
int start_call_failed(dpt_backend_comm &c, int ordinal, cudaError_t status, const char *cuda_call,
                      const char *call, const char *detail, const Error &e) {
  char what[160];
  std::snprintf(what, sizeof what, "%s (%s%s)", cuda_call, call, detail);
  const int rc = cuda_failed(e, ordinal, what, status);
  abort_all(c);
  return rc;
}

// Every rank's stream `to` ordered after what its stream `from` holds now, through its event `event`.
int order_streams(dpt_backend_comm &c, dpt_backend_context *const *contexts, StreamOf from, StreamOf to,
                  EventOf event, const char *call, const Error &e) {
  for (size_t r = 0; r < c.ordinals.size(); ++r) {
    const int ordinal = c.ordinals[r];
    dpt_backend_context &ctx = *contexts[r];
    DeviceGuard guard(ordinal);
    cudaError_t s = cudaEventRecord(ctx.*event, ctx.*from);
    if (s == cudaSuccess) s = cudaStreamWaitEvent(ctx.*to, ctx.*event, 0);
    if (s != cudaSuccess)
      return start_call_failed(c, ordinal, s, "cudaEventRecord / cudaStreamWaitEvent", call, "", e);
  }
  return 0;
}

}  // namespace

int order_for_start(dpt_backend_comm &c, dpt_backend_context *const *contexts, const char *call,
                    const Error &e) {
  return order_streams(c, contexts, &dpt_backend_context::stream, &dpt_backend_context::comm_stream,
                       &dpt_backend_context::comm_ready, call, e);
}

// The event of start number c.started on every rank's communication stream (the events are made on first
// need and kept).
int record_started(dpt_backend_comm &c, dpt_backend_context *const *contexts, const char *call,
                   const Error &e) {
  c.started_events.resize(c.ordinals.size());
  for (size_t r = 0; r < c.ordinals.size(); ++r) {
    const int ordinal = c.ordinals[r];
    DeviceGuard guard(ordinal);
    std::vector<cudaEvent_t> &events = c.started_events[r];
    cudaError_t s = cudaSuccess;
    if (events.size() <= c.started) {
      events.push_back(nullptr);
      s = cudaEventCreateWithFlags(&events.back(), cudaEventDisableTiming);
      if (s != cudaSuccess) events.pop_back();
    }
    if (s == cudaSuccess) s = cudaEventRecord(events[c.started], contexts[r]->comm_stream);
    if (s != cudaSuccess) return start_call_failed(c, ordinal, s, "cudaEventRecord", call, "", e);
  }
  ++c.started;
  return 0;
}

namespace {

struct AllReduceArguments {
  dpt_backend_comm *c;
  dpt_backend_context *const *contexts;
  size_t buffer_count;
  float *const *buffers;
  const size_t *counts;
};

ncclResult_t queue_all_reduces_started(void *arguments) {
  const AllReduceArguments &a = *static_cast<const AllReduceArguments *>(arguments);
  return queue_all_reduces(*a.c, a.contexts, a.buffer_count, a.buffers, a.counts,
                           &dpt_backend_context::comm_stream);
}

}  // namespace

int start_collective(dpt_backend_comm &c, dpt_backend_context *const *contexts, const char *call,
                     ncclResult_t (*queue)(void *), void *arguments, const Error &e) {
  try {
    DeviceGuard guard(c.ordinals[0]);  // restores the caller's device, whichever NCCL leaves current
    // Every rank's communication stream ordered after what its context's stream holds now.
    if (const int rc = order_for_start(c, contexts, call, e)) return rc;
    ncclResult_t status = ncclGroupStart();
    if (status != ncclSuccess) return nccl_failed(e, c.ranks.c_str(), "ncclGroupStart", status, nullptr);
    if (const int rc = close_group(c, queue(arguments), call, e)) return rc;
    return record_started(c, contexts, call, e);
  } catch (const std::bad_alloc &) {
    return report(e, DPT_BACKEND_ERROR_OUT_OF_MEMORY, "%s: %s: out of host memory", c.ranks.c_str(), call);
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "%s: %s: unexpected C++ exception", c.ranks.c_str(), call);
  }
}

int comm_all_reduce_start(dpt_backend_comm *comm, dpt_backend_context *const *contexts, size_t buffer_count,
                          float *const *buffers, const size_t *counts, int32_t wire_dtype, char *error,
                          size_t error_size) {
  const Error e{error, error_size};
  const char *call = "comm_all_reduce_start";
  if (comm == nullptr) return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: NULL communicator", call);
  if (wire_dtype != DPT_DTYPE_F32 && wire_dtype != DPT_DTYPE_BF16 && wire_dtype != DPT_DTYPE_F16)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "%s: %s: wire dtype %d (DPT_DTYPE_F32, DPT_DTYPE_BF16 or DPT_DTYPE_F16)",
                  comm->ranks.c_str(), call, int(wire_dtype));
  if (const int rc = check_ranks(*comm, contexts, buffer_count, buffers, counts, call, e)) return rc;
  if (buffer_count == 0) return 0;
  if (wire_dtype != DPT_DTYPE_F32) {  // the 16-bit sequence on the communication streams
    const auto enqueue16 = [&] {
      WirePlan plan;
      if (const int rc = plan_wire(*comm, buffer_count, counts, plan, e)) return rc;
      const size_t values = 2 * size_t(comm->world) * plan.stride;
      if (values == 0) return 0;  // every buffer empty: a start with nothing in it
      if (const int rc = ensure_wire16_staging(*comm, values, e)) return rc;
      return enqueue_planned(*comm, contexts, buffer_count, buffers, counts, wire_dtype, plan, 0,
                             &dpt_backend_context::comm_stream, e);
    };
    return start_sequence(*comm, contexts, call, enqueue16, e);
  }
  AllReduceArguments arguments{comm, contexts, buffer_count, buffers, counts};
  return start_collective(*comm, contexts, call, &queue_all_reduces_started, &arguments, e);
}

int join_started(dpt_backend_comm &c, dpt_backend_context *const *contexts, size_t keep, const char *call,
                 const Error &e) {
  if (c.started <= keep) return 0;
  const size_t last = c.started - keep - 1;  // the newest start the streams wait for
  for (size_t r = 0; r < c.ordinals.size(); ++r) {
    const int ordinal = c.ordinals[r];
    DeviceGuard guard(ordinal);
    const cudaError_t s = cudaStreamWaitEvent(contexts[r]->stream, c.started_events[r][last], 0);
    if (s != cudaSuccess)
      return start_call_failed(c, ordinal, s, "cudaStreamWaitEvent", call, ", after the started collectives",
                               e);
  }
  return 0;
}

int comm_join_started(dpt_backend_comm *comm, dpt_backend_context *const *contexts, size_t keep, char *error,
                      size_t error_size) {
  const Error e{error, error_size};
  const char *call = "comm_join_started";
  if (comm == nullptr) return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: NULL communicator", call);
  if (const int rc = check_contexts(*comm, contexts, call, e)) return rc;
  return join_started(*comm, contexts, keep, call, e);
}

int comm_wait_started(dpt_backend_comm *comm, dpt_backend_context *const *contexts, double timeout_seconds,
                      char *error, size_t error_size) {
  const Error e{error, error_size};
  if (comm == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "comm_wait_started: NULL communicator");
  if (const int rc = check_contexts(*comm, contexts, "comm_wait_started", e)) return rc;
  if (comm->started == 0) return 0;
  comm->started = 0;
  return run_collective(
      *comm, contexts, "comm_wait_started", "the started collectives (ncclAllReduce, ncclReduce)",
      timeout_seconds,
      [&] {  // each context's stream after its communication stream's end, which the event marks
        return order_streams(*comm, contexts, &dpt_backend_context::comm_stream, &dpt_backend_context::stream,
                             &dpt_backend_context::event, "comm_wait_started", e);
      },
      e);
}

}  // namespace dpt::cuda
