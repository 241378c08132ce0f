// Collectives started beside the compute (comm_all_reduce_start, comm_reduce_ranges_start) and their ends
// (comm_join_started, comm_wait_started): stand in for NCCL on a communication stream. A start runs the
// work queued on every rank's context (the collective is ordered after it) and takes a copy of the values
// it sends; a join or the wait runs what was queued since (which on a GPU may run before, beside or after
// the collective), then sums the copies in rank order (across processes through the board, under the
// wait's deadline, or the default one for a join) and writes the results. So the simulator takes the latest
// values a start may see, and writes its results at the latest moment a join or the wait allows: a core
// that writes a buffer a start sends before then is told so (DPT_BACKEND_ERROR: on a GPU a race), and one
// that reads a result sees the values before the collective, as the GPU's race would let it. comm_inject_hang
// leaves its rank out of every start until the wait, which then waits out its timeout and aborts (a join
// leaves such starts unfinished).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "comm.hpp"
#include "sim.hpp"

namespace dpt_sim {

int begin_start(dpt_backend_comm &c, dpt_backend_context *const *contexts, const char *call, bool &hung,
                const Error &e) {
  hung = c.hang_rank >= 0;
  if (hung) {
    c.started_hung = true;
    return 0;
  }
  double timeout = 0;  // (begin_collective's default; a start does not wait)
  return begin_collective(c, contexts, call, timeout, e);
}

namespace {

constexpr const char *kAllReduce = "comm_all_reduce_start";
constexpr const char *kReduce = "comm_reduce_ranges_start";
constexpr const char *kJoin = "comm_join_started";
constexpr const char *kWait = "comm_wait_started";

// A copy of the floats of each span (empty for an absent one), and the same spans over the copies.
struct Copies {
  std::vector<std::vector<float>> values;
  std::vector<Span> spans;
  explicit Copies(const std::vector<Span> &of) : spans(of) {
    for (const Span &s : of)
      values.emplace_back(s ? s.f() : nullptr, s ? s.f() + s.bytes / sizeof(float) : nullptr);
    for (size_t i = 0; i < spans.size(); ++i)
      if (spans[i]) spans[i].host = reinterpret_cast<char *>(values[i].data());
  }
  // The spans copied still hold the copies' bytes.
  bool unchanged(const std::vector<Span> &of) const {
    for (size_t i = 0; i < of.size(); ++i)
      if (of[i] && std::memcmp(of[i].host, values[i].data(), of[i].bytes) != 0) return false;
    return true;
  }
};

// A start's wire (float32 or one of the 16-bit ones) and communicator checked. 0 to go on.
int refuse(const dpt_backend_comm &c, int32_t wire, const char *call, const Error &e) {
  const char *ranks = c.ranks.c_str();
  if (wire != DPT_DTYPE_F32 && wire != DPT_DTYPE_BF16 && wire != DPT_DTYPE_F16)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "%s: %s: wire dtype %d (DPT_DTYPE_F32, DPT_DTYPE_BF16 or DPT_DTYPE_F16)", ranks, call,
                  int(wire));
  if (c.aborted)
    return report(e, DPT_BACKEND_ERROR_COMMUNICATION,
                  "%s: %s: the communicator was aborted after an earlier failure; destroy it", ranks, call);
  return 0;
}

int start_all_reduce(dpt_backend_comm &c, dpt_backend_context *const *contexts, size_t buffer_count,
                     float *const *buffers, const size_t *counts, int32_t wire, const Error &e) {
  if (const int rc = refuse(c, wire, kAllReduce, e)) return rc;
  if (buffer_count == 0) return 0;
  std::vector<Span> spans;
  if (const int rc = check_ranks(c, contexts, buffer_count, buffers, counts, spans, kAllReduce, e)) return rc;
  bool hung = false;
  if (const int rc = begin_start(c, contexts, kAllReduce, hung, e)) return rc;
  if (hung) return 0;
  auto copies = std::make_shared<Copies>(spans);
  std::vector<size_t> sizes(counts, counts + buffer_count);
  c.started.push_back({[copies, spans, sizes, wire](dpt_backend_comm &comm, double deadline) {
    if (!copies->unchanged(spans)) return StartedCollective::kWritten;
    const size_t buffers = sizes.size();
    if (comm.board == nullptr)
      sum_ranks(comm.ordinals.size(), buffers, sizes.data(), wire, copies->spans);
    else if (!sum_across_processes(comm, buffers, sizes.data(), wire, copies->spans, deadline))
      return StartedCollective::kStalled;
    for (size_t i = 0; i < spans.size(); ++i)
      if (spans[i]) std::copy(copies->values[i].begin(), copies->values[i].end(), spans[i].f());
    return StartedCollective::kDone;
  }});
  return 0;
}

int start_reduce(dpt_backend_comm &c, dpt_backend_context *const *contexts, const float *const *sends,
                 float *const *recvs, const size_t *bounds, int32_t wire, const Error &e) {
  if (const int rc = refuse(c, wire, kReduce, e)) return rc;
  const size_t world = c.board != nullptr ? size_t(c.board->world_ranks()) : c.ordinals.size();
  const size_t first = c.board != nullptr ? size_t(c.board->first_rank()) : 0;
  std::vector<Span> send_spans, recv_spans;
  if (const int rc = check_reduce_ranges(c, contexts, sends, recvs, bounds, world, first, send_spans,
                                         recv_spans, kReduce, e))
    return rc;
  bool hung = false;
  if (const int rc = begin_start(c, contexts, kReduce, hung, e)) return rc;
  if (hung) return 0;
  auto copies = std::make_shared<Copies>(send_spans);
  std::vector<size_t> offsets(bounds, bounds + world + 1);
  c.started.push_back(
      {[copies, send_spans, recv_spans, offsets, world, wire](dpt_backend_comm &comm, double deadline) {
        if (!copies->unchanged(send_spans)) return StartedCollective::kWritten;
        if (comm.board == nullptr)
          reduce_in_process(world, offsets.data(), wire, copies->spans, recv_spans);
        else if (!reduce_across_processes(comm, offsets.data(), wire, copies->spans, recv_spans, deadline))
          return StartedCollective::kStalled;
        return StartedCollective::kDone;
      }});
  return 0;
}

// The started collectives but the last `keep`, finished in the order they were started, after the work
// queued on every context since ran.
int finish(dpt_backend_comm &c, dpt_backend_context *const *contexts, size_t keep, double timeout_seconds,
           const Error &e) {
  const double deadline = steady_seconds() + timeout_seconds;
  if (c.started.size() <= keep) return 0;
  for (size_t r = 0; r < c.ordinals.size(); ++r)
    if (const int rc = drain_and_peek(*contexts[r], e)) {
      abort_comm(c);
      return rc;
    }
  const size_t count = c.started.size() - keep;
  std::vector<StartedCollective> due(c.started.begin(), c.started.begin() + long(count));
  c.started.erase(c.started.begin(), c.started.begin() + long(count));
  for (StartedCollective &op : due) {
    const StartedCollective::Outcome outcome = op.finish(c, deadline);
    if (outcome == StartedCollective::kStalled)
      return processes_stalled(c, timeout_seconds, "the started collectives", e);
    if (outcome == StartedCollective::kWritten) {
      abort_comm(c);
      return report(
          e, DPT_BACKEND_ERROR,
          "%s: a buffer that a started collective sends was written before a join or the wait ended it "
          "(a race on a GPU)",
          c.ranks.c_str());
    }
  }
  return 0;
}

// The contexts checked as comm_all_reduce's (one empty buffer per rank), and the communicator alive.
int check_ends(dpt_backend_comm &c, dpt_backend_context *const *contexts, const char *call, const Error &e) {
  const size_t none = 0;
  std::vector<Span> no_spans;
  std::vector<float *> no_buffers(c.ordinals.size(), nullptr);
  if (const int rc = check_ranks(c, contexts, 1, no_buffers.data(), &none, no_spans, call, e)) return rc;
  if (c.aborted)
    return report(e, DPT_BACKEND_ERROR_COMMUNICATION,
                  "%s: %s: the communicator was aborted after an earlier failure; destroy it",
                  c.ranks.c_str(), call);
  return 0;
}

int join(dpt_backend_comm &c, dpt_backend_context *const *contexts, size_t keep, const Error &e) {
  if (const int rc = check_ends(c, contexts, kJoin, e)) return rc;
  if (c.started_hung) return 0;  // what depends on them waits until the wait aborts
  return finish(c, contexts, keep, kDefaultTimeoutSeconds, e);
}

int wait(dpt_backend_comm &c, dpt_backend_context *const *contexts, double timeout_seconds, const Error &e) {
  const double begin = steady_seconds();
  if (const int rc = check_ends(c, contexts, kWait, e)) return rc;
  if (!(timeout_seconds > 0.0) || !std::isfinite(timeout_seconds)) timeout_seconds = kDefaultTimeoutSeconds;
  if (c.started_hung) {
    const int hang_rank = c.hang_rank;
    c.hang_rank = -1;
    c.started.clear();
    c.started_hung = false;
    return wait_out_hang(c, hang_rank, begin, timeout_seconds,
                         "the started collectives (ncclAllReduce, ncclReduce)", e);
  }
  return finish(c, contexts, 0, timeout_seconds, e);
}

// comm's entry: `call` named in the reports, body() its work once the communicator is known to be live.
template <class Body>
int entry(dpt_backend_comm *comm, const char *call, const Error &e, Body body) {
  if (comm == nullptr) return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: NULL communicator", call);
  try {
    if (!comm_alive(comm))
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %p is not a live communicator", call,
                    static_cast<void *>(comm));
    return body(*comm);
  } catch (const std::bad_alloc &) {
    return report(e, DPT_BACKEND_ERROR_OUT_OF_MEMORY, "%s: %s: out of host memory", comm->ranks.c_str(),
                  call);
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "%s: %s: unexpected C++ exception", comm->ranks.c_str(), call);
  }
}

}  // namespace

int comm_all_reduce_start(dpt_backend_comm *comm, dpt_backend_context *const *contexts, size_t buffer_count,
                          float *const *buffers, const size_t *counts, int32_t wire_dtype, char *error,
                          size_t error_size) {
  const Error e{error, error_size};
  return entry(comm, kAllReduce, e, [&](dpt_backend_comm &c) {
    return start_all_reduce(c, contexts, buffer_count, buffers, counts, wire_dtype, e);
  });
}

int comm_reduce_ranges_start(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                             const float *const *sends, float *const *recvs, const size_t *bounds,
                             int32_t wire_dtype, char *error, size_t error_size) {
  const Error e{error, error_size};
  return entry(comm, kReduce, e, [&](dpt_backend_comm &c) {
    return start_reduce(c, contexts, sends, recvs, bounds, wire_dtype, e);
  });
}

int comm_join_started(dpt_backend_comm *comm, dpt_backend_context *const *contexts, size_t keep, char *error,
                      size_t error_size) {
  const Error e{error, error_size};
  return entry(comm, kJoin, e, [&](dpt_backend_comm &c) { return join(c, contexts, keep, e); });
}

int comm_wait_started(dpt_backend_comm *comm, dpt_backend_context *const *contexts, double timeout_seconds,
                      char *error, size_t error_size) {
  const Error e{error, error_size};
  return entry(comm, kWait, e, [&](dpt_backend_comm &c) { return wait(c, contexts, timeout_seconds, e); });
}

}  // namespace dpt_sim
