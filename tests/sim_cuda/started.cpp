// comm_all_reduce_start and comm_wait_started: stand in for NCCL's all-reduce on a communication stream
// beside the compute. A start runs the work queued on every rank's context (the all-reduce is ordered after
// it) and takes a copy of the buffers' values; the wait runs what was queued since (which on a GPU may run
// before, beside or after the all-reduce), then sums the copies in rank order (across processes through the
// board, under the wait's deadline) and writes the sums into the buffers. So the simulator takes the
// latest values a start may see, and writes its sums at the latest moment a wait allows: a core that writes
// a started buffer before the wait loses what it wrote, and one that reads it sees the unreduced values,
// as the GPU's race would let it. comm_inject_hang leaves its rank out of every start until the wait, which
// then waits out its timeout and aborts.
#include <algorithm>
#include <cmath>
#include <new>
#include <string>
#include <vector>

#include "comm.hpp"
#include "sim.hpp"

namespace dpt_sim {

namespace {

constexpr const char *kStart = "comm_all_reduce_start";
constexpr const char *kWait = "comm_wait_started";

int start(dpt_backend_comm &c, dpt_backend_context *const *contexts, size_t buffer_count,
          float *const *buffers, const size_t *counts, int32_t wire, const Error &e) {
  const char *ranks = c.ranks.c_str();
  if (wire != DPT_DTYPE_F32)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "%s: %s: wire dtype %d (DPT_DTYPE_F32 only; a 16-bit wire: comm_all_reduce)", ranks, kStart,
                  int(wire));
  if (c.aborted)
    return report(e, DPT_BACKEND_ERROR_COMMUNICATION,
                  "%s: %s: the communicator was aborted after an earlier failure; destroy it", ranks, kStart);
  if (buffer_count == 0) return 0;
  StartedAllReduce op;
  if (const int rc = check_ranks(c, contexts, buffer_count, buffers, counts, op.buffers, kStart, e))
    return rc;
  if (c.hang_rank >= 0) {  // nothing of it will finish: the wait says so
    c.started_hung = true;
    return 0;
  }
  double timeout = 0;  // (begin_collective's default; a start does not wait)
  if (const int rc = begin_collective(c, contexts, kStart, timeout, e)) return rc;
  op.counts.assign(counts, counts + buffer_count);
  for (const Span &s : op.buffers)
    op.started.emplace_back(s ? s.f() : nullptr, s ? s.f() + s.bytes / sizeof(float) : nullptr);
  c.started.push_back(std::move(op));
  return 0;
}

// The started all-reduces' sums, in the order they were started, written into their buffers.
int finish(dpt_backend_comm &c, dpt_backend_context *const *contexts, double timeout_seconds,
           const Error &e) {
  const double begin = steady_seconds();
  if (!(timeout_seconds > 0.0) || !std::isfinite(timeout_seconds)) timeout_seconds = kDefaultTimeoutSeconds;
  if (c.started_hung) {
    const int hang_rank = c.hang_rank;
    c.hang_rank = -1;
    c.started.clear();
    c.started_hung = false;
    return wait_out_hang(c, hang_rank, begin, timeout_seconds, "ncclAllReduce (started)", e);
  }
  std::vector<StartedAllReduce> started = std::move(c.started);
  c.started.clear();
  for (size_t r = 0; r < c.ordinals.size(); ++r)
    if (const int rc = drain_and_peek(*contexts[r], e)) {
      abort_comm(c);
      return rc;
    }
  const double deadline = begin + timeout_seconds;
  for (StartedAllReduce &op : started) {
    const size_t buffers = op.counts.size();
    std::vector<Span> values = op.buffers;  // the same spans over the started copies
    for (size_t i = 0; i < values.size(); ++i)
      if (values[i]) values[i].host = reinterpret_cast<char *>(op.started[i].data());
    if (c.board == nullptr)
      sum_ranks(c.ordinals.size(), buffers, op.counts.data(), DPT_DTYPE_F32, values);
    else if (!sum_across_processes(c, buffers, op.counts.data(), DPT_DTYPE_F32, values, deadline))
      return processes_stalled(c, timeout_seconds, "ncclAllReduce (started)", e);
    for (size_t i = 0; i < values.size(); ++i)
      if (values[i]) std::copy(op.started[i].begin(), op.started[i].end(), op.buffers[i].f());
  }
  return 0;
}

}  // namespace

int comm_all_reduce_start(dpt_backend_comm *comm, dpt_backend_context *const *contexts, size_t buffer_count,
                          float *const *buffers, const size_t *counts, int32_t wire_dtype, char *error,
                          size_t error_size) {
  const Error e{error, error_size};
  if (comm == nullptr) return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: NULL communicator", kStart);
  try {
    if (!comm_alive(comm))
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %p is not a live communicator", kStart,
                    static_cast<void *>(comm));
    return start(*comm, contexts, buffer_count, buffers, counts, wire_dtype, e);
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
  if (comm == nullptr) return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: NULL communicator", kWait);
  try {
    if (!comm_alive(comm))
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %p is not a live communicator", kWait,
                    static_cast<void *>(comm));
    const size_t none = 0;
    std::vector<Span> no_spans;
    std::vector<float *> no_buffers(comm->ordinals.size(), nullptr);
    // The contexts checked as comm_all_reduce's (one empty buffer per rank).
    if (const int rc = check_ranks(*comm, contexts, 1, no_buffers.data(), &none, no_spans, kWait, e))
      return rc;
    if (comm->aborted)
      return report(e, DPT_BACKEND_ERROR_COMMUNICATION,
                    "%s: %s: the communicator was aborted after an earlier failure; destroy it",
                    comm->ranks.c_str(), kWait);
    if (comm->started.empty() && !comm->started_hung) return 0;
    return finish(*comm, contexts, timeout_seconds, e);
  } catch (const std::bad_alloc &) {
    return report(e, DPT_BACKEND_ERROR_OUT_OF_MEMORY, "%s: %s: out of host memory", comm->ranks.c_str(),
                  kWait);
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "%s: %s: unexpected C++ exception", comm->ranks.c_str(), kWait);
  }
}

}  // namespace dpt_sim
