// comm_all_reduce_f64: stands in for NCCL's float64 all-reduce of a few numbers (batch norm's per-channel
// sums). It runs the work queued on every rank's context, then sums each element in global rank order, in
// double, and writes the sum to every rank: within the process directly, across processes through the board
// (process_board.hpp: a double takes two of a slot's floats). comm_inject_hang makes it wait out its timeout
// and abort, as the float32 all-reduce does; so does a process that stalls or dies.
#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "comm.hpp"
#include "sim.hpp"

namespace dpt_sim {

namespace {

const char *const kCall = "comm_all_reduce_f64";

int check(const dpt_backend_comm &c, dpt_backend_context *const *contexts, double *const *buffers,
          size_t count, std::vector<Span> &spans, const Error &e) {
  const char *ranks = c.ranks.c_str();
  if (c.aborted)
    return report(e, DPT_BACKEND_ERROR_COMMUNICATION,
                  "%s: %s: the communicator was aborted after an earlier failure; destroy it", ranks, kCall);
  if (contexts == nullptr || buffers == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %s: NULL array", ranks, kCall);
  spans.assign(c.ordinals.size(), Span{});
  for (size_t r = 0; r < c.ordinals.size(); ++r) {
    if (const int rc = check_rank_context(c, contexts, r, kCall, e)) return rc;
    if (buffers[r] == nullptr)
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %s: NULL buffer of rank %zu", ranks, kCall,
                    r);
    size_t bytes = 0;
    if (!checked_bytes(count, sizeof(double), bytes))
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %s: %zu doubles overflow", ranks, kCall,
                    count);
    if (const int rc = resolve(*contexts[r], kCall, "buffer", buffers[r], bytes, alignof(double),
                               Where::kContextDevice, false, spans[r], e))
      return rc;
  }
  return 0;
}

double *doubles(const Span &s) {
  return reinterpret_cast<double *>(s.host);
}

// Across processes: kChunk / 2 doubles per rank and round, summed in global rank order; false when a peer did
// not arrive by the deadline.
bool sum_across_processes(dpt_backend_comm &c, size_t count, const std::vector<Span> &spans,
                          double deadline) {
  ProcessBoard &board = *c.board;
  const size_t per_round = ProcessBoard::kChunk / 2, local = c.ordinals.size();
  std::vector<double> sums;
  for (size_t at = 0; at < count; at += per_round) {
    const size_t n = std::min(per_round, count - at);
    for (size_t r = 0; r < local; ++r)
      std::memcpy(board.slot(board.first_rank() + int(r)), doubles(spans[r]) + at, n * sizeof(double));
    if (!board.arrive_and_wait(deadline)) return false;  // every rank's piece is on the board
    sums.assign(n, 0.0);
    for (int g = 0; g < board.world_ranks(); ++g) {
      const double *slot = reinterpret_cast<const double *>(board.slot(g));
      for (size_t i = 0; i < n; ++i) sums[i] = g == 0 ? slot[i] : sums[i] + slot[i];
    }
    if (!board.arrive_and_wait(deadline)) return false;  // every rank has read the board
    for (size_t r = 0; r < local; ++r) std::memcpy(doubles(spans[r]) + at, sums.data(), n * sizeof(double));
  }
  return true;
}

}  // namespace

int comm_all_reduce_f64(dpt_backend_comm *comm, dpt_backend_context *const *contexts, double *const *buffers,
                        size_t count, double timeout_seconds, char *error, size_t error_size) {
  const Error e{error, error_size};
  if (comm == nullptr) return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: NULL communicator", kCall);
  if (!comm_alive(comm))
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %p is not a live communicator", kCall,
                  static_cast<void *>(comm));
  try {
    dpt_backend_comm &c = *comm;
    std::vector<Span> spans;
    if (count == 0) {
      if (c.aborted)
        return report(e, DPT_BACKEND_ERROR_COMMUNICATION,
                      "%s: %s: the communicator was aborted after an earlier failure; destroy it",
                      c.ranks.c_str(), kCall);
      return 0;
    }
    if (const int rc = check(c, contexts, buffers, count, spans, e)) return rc;
    const double start = steady_seconds();  // the timeout counts the work queued before, as on a GPU
    if (const int rc = begin_collective(c, contexts, kCall, timeout_seconds, e)) return rc;
    const int hang_rank = c.hang_rank;
    c.hang_rank = -1;
    if (hang_rank >= 0) {  // the others' sums are undefined (here: NaN, so that using them shows)
      for (size_t r = 0; r < c.ordinals.size(); ++r)
        if (int(r) != hang_rank)
          std::fill(doubles(spans[r]), doubles(spans[r]) + count, std::numeric_limits<double>::quiet_NaN());
      return wait_out_hang(c, hang_rank, start, timeout_seconds, "ncclAllReduce (float64)", e);
    }
    if (c.board != nullptr) {
      if (sum_across_processes(c, count, spans, start + timeout_seconds)) return 0;
      return processes_stalled(c, timeout_seconds, "ncclAllReduce (float64)", e);
    }
    for (size_t i = 0; i < count; ++i) {
      double s = doubles(spans[0])[i];
      for (size_t r = 1; r < spans.size(); ++r) s += doubles(spans[r])[i];
      for (const Span &span : spans) doubles(span)[i] = s;
    }
    return 0;
  } catch (const std::bad_alloc &) {
    return report(e, DPT_BACKEND_ERROR_OUT_OF_MEMORY, "%s: %s: out of host memory", comm->ranks.c_str(),
                  kCall);
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "%s: %s: unexpected C++ exception", comm->ranks.c_str(), kCall);
  }
}

}  // namespace dpt_sim
