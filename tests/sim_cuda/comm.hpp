// The simulated NCCL communicator (backend interface: dpt_backend_comm), shared by the all-reduce
// (collectives.cpp, started.cpp), the ranges' gather (gather.cpp) and the other collectives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/float16.hpp"
#include "interface/backend_interface.h"
#include "process_board.hpp"
#include "sim.hpp"

namespace dpt_sim {

// One start (comm_all_reduce_start, comm_reduce_ranges_start): finish() checks that the buffers it sends
// still hold what they held when it started (the work queued before had run, and a copy was taken), sums
// the copies and writes the results where they go.
struct StartedCollective {
  enum Outcome {
    kDone,
    kStalled /* a peer process did not arrive by the deadline */,
    kWritten /* a sent
            buffer changed */
  };
  std::function<Outcome(dpt_backend_comm &, double deadline)> finish;
};

}  // namespace dpt_sim

struct dpt_backend_comm {
  std::vector<int> ordinals;  // local rank r is on device ordinals[r]
  std::string ranks;          // "cuda:0,1", for messages
  bool aborted = false;
  int hang_rank = -1;                            // comm_inject_hang: the rank the next collective leaves out
  std::unique_ptr<dpt_sim::ProcessBoard> board;  // comm_create_multi: the ranks of the other processes
  std::vector<dpt_sim::StartedCollective> started;  // the starts not yet joined or waited for
  bool started_hung = false;  // one of them left out hang_rank: the wait waits out its timeout
};

namespace dpt_sim {

constexpr double kDefaultTimeoutSeconds = 300.0;

inline bool valid_wire(int32_t wire) {
  return wire == DPT_DTYPE_F32 || wire == DPT_DTYPE_BF16 || wire == DPT_DTYPE_F16;
}

// The value a wire of type wire carries for x.
inline float round_for(int32_t wire, float x) {
  return wire == DPT_DTYPE_BF16 ? dpt::round_to_bf16(x) : wire == DPT_DTYPE_F16 ? dpt::round_to_f16(x) : x;
}

// The sum of values[0 .. parts) on the wire: float32 as they are, in order; or each rounded to the 16-bit
// type, summed in float32 from +0 in order, the sum rounded (backend_interface.h's 16-bit rule).
template <class Value>
float wire_sum(int32_t wire, size_t parts, Value value) {
  if (wire == DPT_DTYPE_F32) {
    float s = value(0);
    for (size_t r = 1; r < parts; ++r) s += value(r);
    return s;
  }
  float s = 0.0f;
  for (size_t r = 0; r < parts; ++r) s += round_for(wire, value(r));
  return round_for(wire, s);
}

// A communicator that comm_create or comm_create_multi made and comm_destroy did not yet destroy.
bool comm_alive(const dpt_backend_comm *c);
// After a failure: every later collective is refused, as NCCL's after ncclCommAbort.
void abort_comm(dpt_backend_comm &c);

// The start of collective `call` on c, its arguments checked: a failure injected on one of its GPUs
// (DPTRAIN_SIM_CUDA_FAIL=<call>@N) aborts the communicator; then the work queued on every rank's context
// runs (the collective is ordered after it, as on a GPU; a failure of it aborts the communicator too).
// timeout_seconds not positive and finite becomes the default. 0 to go on, else the report's code.
int begin_collective(dpt_backend_comm &c, dpt_backend_context *const *contexts, const char *call,
                     double &timeout_seconds, const Error &e);
// A collective that comm_inject_hang left rank hang_rank out of: the others wait until the deadline
// (start + timeout_seconds, steady_seconds()), then the communicator is aborted and `what` reported as not
// finished. Returns the report's code.
int wait_out_hang(dpt_backend_comm &c, int hang_rank, double start, double timeout_seconds, const char *what,
                  const Error &e);
// A collective across processes whose peers did not all arrive on the board by the deadline: the
// communicator aborted, `what` reported. Returns the report's code.
int processes_stalled(dpt_backend_comm &c, double timeout_seconds, const char *what, const Error &e);

// The work queued before a start run (0 to take the copies, else the code), unless comm_inject_hang makes
// it hang: then it is queued as unfinished (*hung), and the wait says so (started.cpp).
int begin_start(dpt_backend_comm &c, dpt_backend_context *const *contexts, const char *call, bool &hung,
                const Error &e);
// Local rank r's context (of `call`): live, and on the rank's GPU. 0 to go on, else the report's code.
int check_rank_context(const dpt_backend_comm &c, dpt_backend_context *const *contexts, size_t r,
                       const char *call, const Error &e);
// comm_all_reduce's arguments (of `call`) checked: spans[r * buffer_count + b] (absent for an empty buffer).
int check_ranks(const dpt_backend_comm &c, dpt_backend_context *const *contexts, size_t buffer_count,
                float *const *buffers, const size_t *counts, std::vector<Span> &spans, const char *call,
                const Error &e);
// The all-reduce proper (everything queued before has run): sums in rank order, written to every rank.
void sum_ranks(size_t ranks, size_t buffer_count, const size_t *counts, int32_t wire,
               const std::vector<Span> &spans);
// The all-reduce across processes, through the board, in global rank order; false when a peer did not
// arrive by the deadline.
bool sum_across_processes(dpt_backend_comm &c, size_t buffer_count, const size_t *counts, int32_t wire,
                          const std::vector<Span> &spans, double deadline);

// comm_reduce_ranges' arguments (of `call`) checked: sends[r] every local rank's vector, recvs[r] its own
// part's receive buffer (absent when empty).
int check_reduce_ranges(const dpt_backend_comm &c, dpt_backend_context *const *contexts,
                        const float *const *sends_in, float *const *recvs_in, const size_t *bounds,
                        size_t world, size_t first, std::vector<Span> &sends, std::vector<Span> &recvs,
                        const char *call, const Error &e);
// The reduce of comm_reduce_ranges within the process (everything queued before has run).
void reduce_in_process(size_t world, const size_t *bounds, int32_t wire, const std::vector<Span> &sends,
                       const std::vector<Span> &recvs);
// The same across processes, through the board; false when a peer did not arrive by the deadline.
bool reduce_across_processes(dpt_backend_comm &c, const size_t *bounds, int32_t wire,
                             const std::vector<Span> &sends, const std::vector<Span> &recvs, double deadline);

}  // namespace dpt_sim
