// Collectives. comm_all_reduce stands in for NCCL over the distinct GPUs of one process: it runs the work
// queued on every rank's context, sums each buffer in rank order 0 .. K-1 and writes the sum to every rank,
// all before it returns (it "waits until done"). comm_inject_hang makes the next all-reduce wait out its
// timeout and fail as an aborted NCCL communicator does. virtual_all_reduce does the same for replicas on
// one GPU. Communicators across processes (nccl_unique_id, comm_create_multi) meet on a shared-memory
// board (process_board.hpp): their all-reduce sums every global rank's buffer in global rank order.
// A 16-bit wire (wire_dtype DPT_DTYPE_BF16 / _F16) gives the real module's bits: each rank's value rounded
// to the type (the core's to_bf16 / to_f16, which the module's kernels reproduce), the float32 sum from +0
// in rank order, the sum rounded; nothing travels here, so that is all there is to it.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "comm.hpp"
#include "core/float16.hpp"
#include "sim.hpp"

namespace dpt_sim {

namespace {
std::mutex live_mutex;
std::unordered_set<const dpt_backend_comm *> live_comms;
}  // namespace

bool comm_alive(const dpt_backend_comm *c) {
  std::lock_guard<std::mutex> lock(live_mutex);
  return live_comms.count(c) != 0;
}

void abort_comm(dpt_backend_comm &c) {
  c.aborted = true;
  c.hang_rank = -1;
}

int begin_collective(dpt_backend_comm &c, dpt_backend_context *const *contexts, const char *call,
                     double &timeout_seconds, const Error &e) {
  // Injected failures: an NCCL error is a communication error, and NCCL's communicator is then aborted.
  for (const int ordinal : c.ordinals)
    if (fault(call, ordinal) != Fault::kNone) {
      const std::string names = c.ranks;
      abort_comm(c);
      return report(e, DPT_BACKEND_ERROR_COMMUNICATION,
                    "%s: %s: simulated failure on cuda:%d (DPTRAIN_SIM_CUDA_FAIL): ncclCommAbort called, the "
                    "communicator is unusable",
                    names.c_str(), call, ordinal);
    }
  if (!(timeout_seconds > 0.0) || !std::isfinite(timeout_seconds)) timeout_seconds = kDefaultTimeoutSeconds;
  // The work queued before is counted in the timeout: run it now. A failure of that work is found by the
  // wait, as on a GPU, and aborts the communicator (it stays pending on its context too).
  for (size_t r = 0; r < c.ordinals.size(); ++r)
    if (const int rc = drain_and_peek(*contexts[r], e)) {
      abort_comm(c);
      return rc;
    }
  return 0;
}

int processes_stalled(dpt_backend_comm &c, double timeout_seconds, const char *what, const Error &e) {
  const std::string names = c.ranks;
  abort_comm(c);
  return report(
      e, DPT_BACKEND_ERROR_COMMUNICATION,
      "%s: %s across processes did not finish within %g s (a process stalled or died): ncclCommAbort "
      "called, the communicator is unusable",
      names.c_str(), what, timeout_seconds);
}

int wait_out_hang(dpt_backend_comm &c, int hang_rank, double start, double timeout_seconds, const char *what,
                  const Error &e) {
  std::this_thread::sleep_for(std::chrono::duration<double>(start + timeout_seconds - steady_seconds()));
  const std::string names = c.ranks;
  const int late = c.ordinals[size_t(hang_rank)];
  abort_comm(c);
  return report(e, DPT_BACKEND_ERROR_COMMUNICATION,
                "%s: %s did not finish within %g s (not finished: cuda:%d): ncclCommAbort called, the "
                "communicator is unusable",
                names.c_str(), what, timeout_seconds, late);
}

int check_rank_context(const dpt_backend_comm &c, dpt_backend_context *const *contexts, size_t r,
                       const char *call, const Error &e) {
  const char *ranks = c.ranks.c_str();
  if (contexts[r] == nullptr || !context_alive(contexts[r]))
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "%s: %s: the context of rank %zu is not a live context", ranks, call, r);
  if (contexts[r]->ordinal != c.ordinals[r])
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "%s: %s: the context of rank %zu is on cuda:%d, the rank on cuda:%d", ranks, call, r,
                  contexts[r]->ordinal, c.ordinals[r]);
  return 0;
}

// Checks the ranks' contexts and buffers; spans[r * buffer_count + b] (absent for an empty buffer).
int check_ranks(const dpt_backend_comm &c, dpt_backend_context *const *contexts, size_t buffer_count,
                float *const *buffers, const size_t *counts, std::vector<Span> &spans, const char *call,
                const Error &e) {
  const char *ranks = c.ranks.c_str();
  if (contexts == nullptr || buffers == nullptr || counts == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %s: NULL array", ranks, call);
  spans.assign(c.ordinals.size() * buffer_count, Span{});
  for (size_t r = 0; r < c.ordinals.size(); ++r) {
    const dpt_backend_context *ctx = contexts[r];
    if (ctx == nullptr)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %s: NULL context of rank %zu", ranks, call,
                    r);
    if (const int rc = check_rank_context(c, contexts, r, call, e)) return rc;
    for (size_t b = 0; b < buffer_count; ++b) {
      if (counts[b] == 0) continue;
      if (const int rc = floats(*ctx, call, "buffer", buffers[r * buffer_count + b], counts[b], false,
                                spans[r * buffer_count + b], e))
        return rc;
    }
  }
  return 0;
}

// The all-reduce proper (everything queued before has run): sums in rank order, written to every rank.
void sum_ranks(size_t ranks, size_t buffer_count, const size_t *counts, int32_t wire,
               const std::vector<Span> &spans) {
  for (size_t b = 0; b < buffer_count; ++b) {
    for (size_t i = 0; i < counts[b]; ++i) {
      const float s = wire_sum(wire, ranks, [&](size_t r) { return spans[r * buffer_count + b].f()[i]; });
      for (size_t r = 0; r < ranks; ++r) spans[r * buffer_count + b].f()[i] = s;
    }
  }
}

// The all-reduce across processes: each buffer a chunk at a time through the board, summed in global rank
// order (this process's ranks are global ranks first .. first + K - 1) and written to this process's ranks.
// false when a peer did not arrive by the deadline.
bool sum_across_processes(dpt_backend_comm &c, size_t buffer_count, const size_t *counts, int32_t wire,
                          const std::vector<Span> &spans, double deadline) {
  ProcessBoard &board = *c.board;
  const size_t local = c.ordinals.size();
  std::vector<float> sums;
  for (size_t b = 0; b < buffer_count; ++b) {
    for (size_t at = 0; at < counts[b]; at += ProcessBoard::kChunk) {
      const size_t n = std::min(ProcessBoard::kChunk, counts[b] - at);
      for (size_t r = 0; r < local; ++r)
        std::memcpy(board.slot(board.first_rank() + int(r)), spans[r * buffer_count + b].f() + at,
                    n * sizeof(float));
      if (!board.arrive_and_wait(deadline)) return false;  // every rank's chunk is on the board
      sums.resize(n);
      for (size_t i = 0; i < n; ++i)
        sums[i] =
            wire_sum(wire, size_t(board.world_ranks()), [&](size_t g) { return board.slot(int(g))[i]; });
      if (!board.arrive_and_wait(deadline)) return false;  // every rank has read the board
      for (size_t r = 0; r < local; ++r)
        std::memcpy(spans[r * buffer_count + b].f() + at, sums.data(), n * sizeof(float));
    }
  }
  return true;
}

namespace {

constexpr int kMaxVirtualReplicas = 32;

std::string rank_names(const int *ordinals, int count) {
  std::string text = "cuda:";
  for (int r = 0; r < count; ++r) {
    if (r > 0) text += ',';
    text += std::to_string(ordinals[r]);
  }
  return text;
}

// Every ordinal names a device, none twice.
int check_ordinals(const int *ordinals, int count, const char *ranks, const Error &e) {
  int devices = 0;
  if (const int rc = device_count_or_report(e, ordinals[0], "comm_create", devices)) return rc;
  for (int r = 0; r < count; ++r) {
    if (ordinals[r] < 0 || ordinals[r] >= devices)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                    "%s: comm_create: no device cuda:%d (%d CUDA devices)", ranks, ordinals[r], devices);
    for (int q = 0; q < r; ++q)
      if (ordinals[q] == ordinals[r])
        return report(
            e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
            "%s: comm_create: cuda:%d appears twice; NCCL needs distinct GPUs (replicas on one GPU: "
            "virtual_all_reduce)",
            ranks, ordinals[r]);
  }
  return 0;
}

// The hung all-reduce: the other ranks wait for the missing one until the deadline, then NCCL is aborted;
// what their buffers hold is undefined (here: NaN, so that using them shows).
int hang(dpt_backend_comm &c, int hang_rank, size_t buffer_count, const std::vector<Span> &spans,
         double start, double timeout_seconds, const char *what, const Error &e) {
  for (size_t r = 0; r < c.ordinals.size(); ++r) {
    if (int(r) == hang_rank) continue;
    for (size_t b = 0; b < buffer_count; ++b) {
      const Span &s = spans[r * buffer_count + b];
      if (!s) continue;
      const float nan = std::numeric_limits<float>::quiet_NaN();
      for (size_t i = 0; i < s.bytes / sizeof(float); ++i) s.f()[i] = nan;
    }
  }
  return wait_out_hang(c, hang_rank, start, timeout_seconds, what, e);
}

int all_reduce(dpt_backend_comm &c, dpt_backend_context *const *contexts, size_t buffer_count,
               float *const *buffers, const size_t *counts, int32_t wire, double timeout_seconds,
               const Error &e) {
  const double start = steady_seconds();
  const char *ranks = c.ranks.c_str();
  if (!valid_wire(wire))
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "%s: comm_all_reduce: wire dtype %d (DPT_DTYPE_F32, _BF16 or _F16)", ranks, int(wire));
  if (c.aborted)
    return report(e, DPT_BACKEND_ERROR_COMMUNICATION,
                  "%s: comm_all_reduce: the communicator was aborted after an earlier failure; destroy it",
                  ranks);
  if (buffer_count == 0) return 0;
  std::vector<Span> spans;
  if (const int rc = check_ranks(c, contexts, buffer_count, buffers, counts, spans, "comm_all_reduce", e))
    return rc;
  // comm_inject_hang applies to this all-reduce only (as in the real module: one that got this far).
  const int hang_rank = c.hang_rank;
  c.hang_rank = -1;
  if (const int rc = begin_collective(c, contexts, "comm_all_reduce", timeout_seconds, e)) return rc;
  if (hang_rank >= 0) {
    const char *what =
        wire == DPT_DTYPE_F32 ? "ncclAllReduce" : "the 16-bit all-reduce (ncclSend/ncclRecv, ncclAllGather)";
    return hang(c, hang_rank, buffer_count, spans, start, timeout_seconds, what, e);
  }
  if (c.board == nullptr) {
    sum_ranks(c.ordinals.size(), buffer_count, counts, wire, spans);
    return 0;
  }
  const double deadline = steady_seconds() + timeout_seconds;
  if (sum_across_processes(c, buffer_count, counts, wire, spans, deadline)) return 0;
  return processes_stalled(c, timeout_seconds, "ncclAllReduce", e);
}

}  // namespace

int comm_create(int count, const int *ordinals, dpt_backend_comm **out, char *error, size_t error_size) {
  const Error e{error, error_size};
  if (out == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "comm_create: NULL output pointer");
  *out = nullptr;
  if (count < 1 || ordinals == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "comm_create: %d ranks (at least 1, with their ordinals)", count);
  try {
    auto c = std::make_unique<dpt_backend_comm>();
    c->ranks = rank_names(ordinals, count);
    if (const int rc = check_ordinals(ordinals, count, c->ranks.c_str(), e)) return rc;
    for (int r = 0; r < count; ++r)
      if (fault("comm_create", ordinals[r]) != Fault::kNone)
        return simulated_failure(e, ordinals[r], "comm_create", false);
    c->ordinals.assign(ordinals, ordinals + count);
    {
      std::lock_guard<std::mutex> lock(live_mutex);
      live_comms.insert(c.get());
    }
    *out = c.release();
    return 0;
  } catch (const std::bad_alloc &) {
    return report(e, DPT_BACKEND_ERROR_OUT_OF_MEMORY, "comm_create: out of host memory");
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "comm_create: unexpected C++ exception");
  }
}

void comm_destroy(dpt_backend_comm *comm) {
  if (comm == nullptr) return;
  try {
    {
      std::lock_guard<std::mutex> lock(live_mutex);
      if (live_comms.erase(comm) == 0) return;
    }
    delete comm;
  } catch (...) {
  }
}

int comm_all_reduce(dpt_backend_comm *comm, dpt_backend_context *const *contexts, size_t buffer_count,
                    float *const *buffers, const size_t *counts, int32_t wire_dtype, double timeout_seconds,
                    char *error, size_t error_size) {
  const Error e{error, error_size};
  if (comm == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "comm_all_reduce: NULL communicator");
  try {
    if (!comm_alive(comm))
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "comm_all_reduce: %p is not a live communicator",
                    static_cast<void *>(comm));
    return all_reduce(*comm, contexts, buffer_count, buffers, counts, wire_dtype, timeout_seconds, e);
  } catch (const std::bad_alloc &) {
    return report(e, DPT_BACKEND_ERROR_OUT_OF_MEMORY, "%s: comm_all_reduce: out of host memory",
                  comm->ranks.c_str());
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "%s: comm_all_reduce: unexpected C++ exception", comm->ranks.c_str());
  }
}

int comm_inject_hang(dpt_backend_comm *comm, int rank, char *error, size_t error_size) {
  const Error e{error, error_size};
  if (comm == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "comm_inject_hang: NULL communicator");
  if (!comm_alive(comm))
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "comm_inject_hang: %p is not a live communicator",
                  static_cast<void *>(comm));
  if (rank < -1 || rank >= int(comm->ordinals.size()))
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: comm_inject_hang: no rank %d",
                  comm->ranks.c_str(), rank);
  comm->hang_rank = rank;
  return 0;
}

int virtual_all_reduce(dpt_backend_context *const *contexts, int replicas, float *const *buffers,
                       size_t count, int32_t wire_dtype, char *error, size_t error_size) {
  const Error e{error, error_size};
  const char *call = "virtual_all_reduce";
  if (!valid_wire(wire_dtype))
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: wire dtype %d (DPT_DTYPE_F32, _BF16 or _F16)",
                  call, int(wire_dtype));
  if (contexts == nullptr || buffers == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: NULL array", call);
  if (replicas < 1 || replicas > kMaxVirtualReplicas)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %d replicas (1 .. %d)", call, replicas,
                  kMaxVirtualReplicas);
  try {
    for (int r = 0; r < replicas; ++r) {
      if (contexts[r] == nullptr || buffers[r] == nullptr)
        return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: NULL context or buffer of replica %d", call,
                      r);
      if (!context_alive(contexts[r]))
        return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                      "%s: the context of replica %d is not a live context", call, r);
      if (contexts[r]->ordinal != contexts[0]->ordinal)
        return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                      "%s: replica %d is on cuda:%d, replica 0 on cuda:%d (one GPU only: use comm_all_reduce "
                      "across GPUs)",
                      call, r, contexts[r]->ordinal, contexts[0]->ordinal);
      for (int q = 0; q < r; ++q)
        if (buffers[q] == buffers[r])
          return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: replicas %d and %d share a buffer", call,
                        q, r);
    }
    const int ordinal = contexts[0]->ordinal;
    if (fault(call, ordinal) != Fault::kNone) return simulated_failure(e, ordinal, call, false);
    if ((replicas == 1 && wire_dtype == DPT_DTYPE_F32) || count == 0) return 0;
    std::vector<Span> spans(static_cast<size_t>(replicas));
    for (int r = 0; r < replicas; ++r) {
      if (const int rc = floats(*contexts[r], call, "buffer", buffers[r], count, false, spans[size_t(r)], e))
        return rc;
      for (int q = 0; q < r; ++q) {
        const char *a = spans[size_t(q)].host, *b = spans[size_t(r)].host;
        if (a < b + spans[size_t(r)].bytes && b < a + spans[size_t(q)].bytes)
          return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                        "cuda:%d: %s: the buffers of replicas %d and %d overlap", ordinal, call, q, r);
      }
    }
    // Ordered after the work queued on every replica's stream, before anything queued later: run the
    // queues now (their errors stay pending on their contexts), then sum.
    for (int r = 0; r < replicas; ++r) drain(*contexts[r]);
    for (size_t i = 0; i < count; ++i) {
      const float s = wire_sum(wire_dtype, size_t(replicas), [&](size_t r) { return spans[r].f()[i]; });
      for (int r = 0; r < replicas; ++r) spans[size_t(r)].f()[i] = s;
    }
    return 0;
  } catch (const std::bad_alloc &) {
    return report(e, DPT_BACKEND_ERROR_OUT_OF_MEMORY, "%s: out of host memory", call);
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "%s: unexpected C++ exception", call);
  }
}

int nccl_unique_id(char *id, char *error, size_t error_size) {
  const Error e{error, error_size};
  if (id == nullptr) return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "nccl_unique_id: NULL id");
  try {
    const std::string name = ProcessBoard::new_name();
    std::memset(id, 0, DPT_BACKEND_NCCL_ID_BYTES);
    std::memcpy(id, name.c_str(), std::min(name.size(), size_t(DPT_BACKEND_NCCL_ID_BYTES - 1)));
    return 0;
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "nccl_unique_id: unexpected C++ exception");
  }
}

int comm_create_multi(const char *id, int world_ranks, int first_rank, int local_count, const int *ordinals,
                      dpt_backend_comm **out, char *error, size_t error_size) {
  const Error e{error, error_size};
  if (out == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "comm_create_multi: NULL output pointer");
  *out = nullptr;
  if (id == nullptr || ordinals == nullptr || local_count < 1 || first_rank < 0 ||
      first_rank + local_count > world_ranks)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "comm_create_multi: ranks %d .. %d of %d (with an id and the ordinals)", first_rank,
                  first_rank + local_count - 1, world_ranks);
  const size_t id_length = strnlen(id, DPT_BACKEND_NCCL_ID_BYTES);
  if (id_length == 0 || id_length == DPT_BACKEND_NCCL_ID_BYTES || id[0] != '/')
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "comm_create_multi: not an id of nccl_unique_id");
  try {
    auto c = std::make_unique<dpt_backend_comm>();
    c->ranks = rank_names(ordinals, local_count) + " (global ranks " + std::to_string(first_rank) + ".." +
               std::to_string(first_rank + local_count - 1) + " of " + std::to_string(world_ranks) + ")";
    if (const int rc = check_ordinals(ordinals, local_count, c->ranks.c_str(), e)) return rc;
    for (int r = 0; r < local_count; ++r)
      if (fault("comm_create", ordinals[r]) != Fault::kNone)
        return simulated_failure(e, ordinals[r], "comm_create_multi", false);
    std::string reason;
    c->board.reset(ProcessBoard::join(std::string(id, id_length), world_ranks, first_rank, local_count,
                                      kDefaultTimeoutSeconds, reason));
    if (c->board == nullptr)
      return report(e, DPT_BACKEND_ERROR_COMMUNICATION, "%s: comm_create_multi: %s", c->ranks.c_str(),
                    reason.c_str());
    c->ordinals.assign(ordinals, ordinals + local_count);
    {
      std::lock_guard<std::mutex> lock(live_mutex);
      live_comms.insert(c.get());
    }
    *out = c.release();
    return 0;
  } catch (const std::bad_alloc &) {
    return report(e, DPT_BACKEND_ERROR_OUT_OF_MEMORY, "comm_create_multi: out of host memory");
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "comm_create_multi: unexpected C++ exception");
  }
}

}  // namespace dpt_sim
