// The simulated NCCL communicator (backend interface: dpt_backend_comm), shared by the all-reduce
// (collectives.cpp) and the ranges' gather (gather.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/float16.hpp"
#include "interface/backend_interface.h"
#include "process_board.hpp"
#include "sim.hpp"

struct dpt_backend_comm {
  std::vector<int> ordinals;  // local rank r is on device ordinals[r]
  std::string ranks;          // "cuda:0,1", for messages
  bool aborted = false;
  int hang_rank = -1;                            // comm_inject_hang: the rank the next collective leaves out
  std::unique_ptr<dpt_sim::ProcessBoard> board;  // comm_create_multi: the ranks of the other processes
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

}  // namespace dpt_sim
