// comm_all_gather_ranges: stands in for NCCL's grouped broadcasts of a sharded vector's ranges. It runs the
// work queued on every rank's context, then copies each range from its owner to every other rank: within
// the process directly, across processes through the board (process_board.hpp), a chunk of every range per
// round. comm_inject_hang makes it wait out its timeout and abort, as the all-reduce does.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#include "comm.hpp"
#include "sim.hpp"

namespace dpt_sim {

namespace {

// Every rank's whole vector, checked (spans[r]).
int check(const dpt_backend_comm &c, dpt_backend_context *const *contexts, float *const *buffers,
          const size_t *bounds, size_t world, std::vector<Span> &spans, const Error &e) {
  const char *ranks = c.ranks.c_str(), *call = "comm_all_gather_ranges";
  if (c.aborted)
    return report(e, DPT_BACKEND_ERROR_COMMUNICATION,
                  "%s: %s: the communicator was aborted after an earlier failure; destroy it", ranks, call);
  if (contexts == nullptr || buffers == nullptr || bounds == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %s: NULL array", ranks, call);
  for (size_t q = 0; q < world; ++q)
    if (bounds[q + 1] < bounds[q])
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %s: bounds not ascending at rank %zu", ranks,
                    call, q);
  spans.assign(c.ordinals.size(), Span{});
  for (size_t r = 0; r < c.ordinals.size(); ++r) {
    if (const int rc = check_rank_context(c, contexts, r, call, e)) return rc;
    if (bounds[world] > 0)
      if (const int rc = floats(*contexts[r], call, "buffer", buffers[r], bounds[world], false, spans[r], e))
        return rc;
  }
  return 0;
}

// Across processes: round k carries elements [k kChunk, (k + 1) kChunk) of every range; false when a peer
// did not arrive by the deadline.
bool gather_across_processes(dpt_backend_comm &c, const size_t *bounds, const std::vector<Span> &spans,
                             double deadline) {
  ProcessBoard &board = *c.board;
  const size_t world = size_t(board.world_ranks()), first = size_t(board.first_rank());
  const size_t local = c.ordinals.size();
  size_t longest = 0;
  for (size_t q = 0; q < world; ++q) longest = std::max(longest, bounds[q + 1] - bounds[q]);
  for (size_t at = 0; at < longest; at += ProcessBoard::kChunk) {
    auto piece = [&](size_t q) {
      const size_t size = bounds[q + 1] - bounds[q];
      return at < size ? std::min(ProcessBoard::kChunk, size - at) : size_t(0);
    };
    for (size_t r = 0; r < local; ++r)  // each local owner puts its range's piece on the board
      std::memcpy(board.slot(int(first + r)), spans[r].f() + bounds[first + r] + at,
                  piece(first + r) * sizeof(float));
    if (!board.arrive_and_wait(deadline)) return false;
    for (size_t q = 0; q < world; ++q)
      for (size_t r = 0; r < local; ++r)
        if (q != first + r)
          std::memcpy(spans[r].f() + bounds[q] + at, board.slot(int(q)), piece(q) * sizeof(float));
    if (!board.arrive_and_wait(deadline)) return false;  // every rank has read the board
  }
  return true;
}

}  // namespace

int comm_all_gather_ranges(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                           float *const *buffers, const size_t *bounds, double timeout_seconds, char *error,
                           size_t error_size) {
  const Error e{error, error_size};
  if (comm == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "comm_all_gather_ranges: NULL communicator");
  if (!comm_alive(comm))
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "comm_all_gather_ranges: %p is not a live communicator", static_cast<void *>(comm));
  try {
    dpt_backend_comm &c = *comm;
    const size_t world = c.board != nullptr ? size_t(c.board->world_ranks()) : c.ordinals.size();
    std::vector<Span> spans;
    if (const int rc = check(c, contexts, buffers, bounds, world, spans, e)) return rc;
    const double start = steady_seconds();  // the timeout counts the work queued before, as on a GPU
    if (const int rc = begin_collective(c, contexts, "comm_all_gather_ranges", timeout_seconds, e)) return rc;
    const int hang_rank = c.hang_rank;
    if (hang_rank >= 0)
      return wait_out_hang(c, hang_rank, start, timeout_seconds, "ncclBroadcast (the ranges' gather)", e);
    if (c.board != nullptr) {
      if (gather_across_processes(c, bounds, spans, start + timeout_seconds)) return 0;
      return processes_stalled(c, timeout_seconds, "ncclBroadcast (the ranges' gather)", e);
    }
    for (size_t q = 0; q < world; ++q)
      for (size_t r = 0; r < world; ++r)
        if (r != q && bounds[q + 1] > bounds[q])
          std::memcpy(spans[r].f() + bounds[q], spans[q].f() + bounds[q],
                      (bounds[q + 1] - bounds[q]) * sizeof(float));
    return 0;
  } catch (const std::bad_alloc &) {
    return report(e, DPT_BACKEND_ERROR_OUT_OF_MEMORY, "%s: comm_all_gather_ranges: out of host memory",
                  comm->ranks.c_str());
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "%s: comm_all_gather_ranges: unexpected C++ exception",
                  comm->ranks.c_str());
  }
}

}  // namespace dpt_sim
