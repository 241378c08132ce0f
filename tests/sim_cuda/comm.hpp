// The simulated NCCL communicator (backend interface: dpt_backend_comm), shared by the all-reduce
// (collectives.cpp) and the ranges' gather (gather.cpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "process_board.hpp"

struct dpt_backend_comm {
  std::vector<int> ordinals;  // local rank r is on device ordinals[r]
  std::string ranks;          // "cuda:0,1", for messages
  bool aborted = false;
  int hang_rank = -1;                            // comm_inject_hang: the rank the next collective leaves out
  std::unique_ptr<dpt_sim::ProcessBoard> board;  // comm_create_multi: the ranks of the other processes
};

namespace dpt_sim {

constexpr double kDefaultTimeoutSeconds = 300.0;

// A communicator that comm_create or comm_create_multi made and comm_destroy did not yet destroy.
bool comm_alive(const dpt_backend_comm *c);
// After a failure: every later collective is refused, as NCCL's after ncclCommAbort.
void abort_comm(dpt_backend_comm &c);

}  // namespace dpt_sim
