// comm_reduce_ranges: stands in for NCCL's grouped reduces of a sharded gradient's bucket, each part to its
// owner. It runs the work queued on every rank's context, then sums each element of every part in global
// rank order with the wire's rounding (as the all-reduce does, so a part holds the bits the all-reduce would
// leave there) and writes the sums to the part's owner: within the process directly, across processes through
// the board (process_board.hpp: every rank's chunk on it, each process summing the chunk and keeping its
// owners' parts). comm_inject_hang makes it wait out its timeout and abort, as the all-reduce does.
#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "comm.hpp"
#include "sim.hpp"

namespace dpt_sim {

namespace {

const char *const kCall = "comm_reduce_ranges";

}  // namespace

// Every local rank's send vector (sends[r]) and its own part's receive buffer (recvs[r], absent when empty).
int check_reduce_ranges(const dpt_backend_comm &c, dpt_backend_context *const *contexts,
                        const float *const *sends_in, float *const *recvs_in, const size_t *bounds,
                        size_t world, size_t first, std::vector<Span> &sends, std::vector<Span> &recvs,
                        const char *call, const Error &e) {
  const char *ranks = c.ranks.c_str();
  if (c.aborted)
    return report(e, DPT_BACKEND_ERROR_COMMUNICATION,
                  "%s: %s: the communicator was aborted after an earlier failure; destroy it", ranks, call);
  if (contexts == nullptr || sends_in == nullptr || recvs_in == nullptr || bounds == nullptr)
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %s: NULL array", ranks, call);
  for (size_t q = 0; q < world; ++q)
    if (bounds[q + 1] < bounds[q])
      return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %s: bounds not ascending at rank %zu", ranks,
                    call, q);
  sends.assign(c.ordinals.size(), Span{});
  recvs.assign(c.ordinals.size(), Span{});
  for (size_t r = 0; r < c.ordinals.size(); ++r) {
    if (const int rc = check_rank_context(c, contexts, r, call, e)) return rc;
    if (bounds[world] > 0)
      if (const int rc = floats(*contexts[r], call, "send", sends_in[r], bounds[world], false, sends[r], e))
        return rc;
    const size_t own = bounds[first + r + 1] - bounds[first + r];
    if (own > 0)
      if (const int rc = floats(*contexts[r], call, "receive", recvs_in[r], own, false, recvs[r], e))
        return rc;
  }
  return 0;
}

// Across processes: round k carries elements [k kChunk, (k + 1) kChunk) of every rank's vector; each process
// sums the round in global rank order and keeps its ranks' parts of it. False when a peer did not arrive by
// the deadline.
bool reduce_across_processes(dpt_backend_comm &c, const size_t *bounds, int32_t wire,
                             const std::vector<Span> &sends, const std::vector<Span> &recvs,
                             double deadline) {
  ProcessBoard &board = *c.board;
  const size_t world = size_t(board.world_ranks()), first = size_t(board.first_rank());
  const size_t local = c.ordinals.size(), count = bounds[world];
  std::vector<float> sums;
  for (size_t at = 0; at < count; at += ProcessBoard::kChunk) {
    const size_t n = std::min(ProcessBoard::kChunk, count - at);
    for (size_t r = 0; r < local; ++r)
      std::memcpy(board.slot(int(first + r)), sends[r].f() + at, n * sizeof(float));
    if (!board.arrive_and_wait(deadline)) return false;  // every rank's chunk is on the board
    sums.resize(n);
    for (size_t i = 0; i < n; ++i)
      sums[i] = wire_sum(wire, world, [&](size_t g) { return board.slot(int(g))[i]; });
    if (!board.arrive_and_wait(deadline)) return false;  // every rank has read the board
    for (size_t r = 0; r < local; ++r) {
      const size_t lo = std::max(bounds[first + r], at), hi = std::min(bounds[first + r + 1], at + n);
      if (lo < hi)
        std::memcpy(recvs[r].f() + (lo - bounds[first + r]), sums.data() + (lo - at),
                    (hi - lo) * sizeof(float));
    }
  }
  return true;
}

// Within the process: each part summed in rank order into a copy first (a receive buffer may be its owner's
// send part), then written to its owner's receive buffer.
void reduce_in_process(size_t world, const size_t *bounds, int32_t wire, const std::vector<Span> &sends,
                       const std::vector<Span> &recvs) {
  std::vector<float> sums;
  for (size_t q = 0; q < world; ++q) {
    const size_t lo = bounds[q], n = bounds[q + 1] - lo;
    if (n == 0) continue;
    sums.resize(n);
    for (size_t i = 0; i < n; ++i)
      sums[i] = wire_sum(wire, world, [&](size_t r) { return sends[r].f()[lo + i]; });
    std::memcpy(recvs[q].f(), sums.data(), n * sizeof(float));
  }
}

int comm_reduce_ranges(dpt_backend_comm *comm, dpt_backend_context *const *contexts,
                       const float *const *sends, float *const *recvs, const size_t *bounds,
                       int32_t wire_dtype, double timeout_seconds, char *error, size_t error_size) {
  const Error e{error, error_size};
  if (comm == nullptr) return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: NULL communicator", kCall);
  if (!valid_wire(wire_dtype))
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT,
                  "%s: %s: wire dtype %d (DPT_DTYPE_F32, _BF16 or _F16)", comm->ranks.c_str(), kCall,
                  int(wire_dtype));
  if (!comm_alive(comm))
    return report(e, DPT_BACKEND_ERROR_INVALID_ARGUMENT, "%s: %p is not a live communicator", kCall,
                  static_cast<void *>(comm));
  try {
    dpt_backend_comm &c = *comm;
    const size_t world = c.board != nullptr ? size_t(c.board->world_ranks()) : c.ordinals.size();
    const size_t first = c.board != nullptr ? size_t(c.board->first_rank()) : 0;
    std::vector<Span> send_spans, recv_spans;
    if (const int rc = check_reduce_ranges(c, contexts, sends, recvs, bounds, world, first, send_spans,
                                           recv_spans, kCall, e))
      return rc;
    const double start = steady_seconds();  // the timeout counts the work queued before, as on a GPU
    if (const int rc = begin_collective(c, contexts, kCall, timeout_seconds, e)) return rc;
    const int hang_rank = c.hang_rank;
    c.hang_rank = -1;
    if (hang_rank >= 0)
      return wait_out_hang(c, hang_rank, start, timeout_seconds, "ncclReduce (the ranges' reduce)", e);
    if (c.board != nullptr) {
      if (reduce_across_processes(c, bounds, wire_dtype, send_spans, recv_spans, start + timeout_seconds))
        return 0;
      return processes_stalled(c, timeout_seconds, "ncclReduce (the ranges' reduce)", e);
    }
    reduce_in_process(world, bounds, wire_dtype, send_spans, recv_spans);
    return 0;
  } catch (const std::bad_alloc &) {
    return report(e, DPT_BACKEND_ERROR_OUT_OF_MEMORY, "%s: %s: out of host memory", comm->ranks.c_str(),
                  kCall);
  } catch (...) {
    return report(e, DPT_BACKEND_ERROR, "%s: %s: unexpected C++ exception", comm->ranks.c_str(), kCall);
  }
}

}  // namespace dpt_sim
