// A NCCL communicator across the processes of an MPI job (issue 6: "NCCL across processes, the unique id
// broadcast through MPI"). The core links neither NCCL nor MPI: NCCL is reached through the CUDA module's
// table (nccl_unique_id, comm_create_multi), MPI through World.
//
// Every process of the job calls create_nccl_world_comm with its own GPUs:
//   1. the global ranks: World::all_reduce of every process's GPU count; a process's first rank is the
//      exclusive prefix sum of the counts before it (process p's GPUs are ranks first .. first + count - 1);
//   2. the unique id: process 0 asks the module for one (ncclGetUniqueId) and World::broadcast's the
//      128 bytes (with process 0's failure, if any, so that every process fails with its reason);
//   3. comm_create_multi: one ncclCommInitRank per local GPU in one NCCL group.
// A failure in steps 1 and 2 is reported on every process; MPI's timeout bounds the waits of both. Step 3
// blocks until every global rank has joined (NCCL's own bootstrap limits apply).
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "comm/world.hpp"
#include "interface/backend_interface.h"

namespace dpt {

using NcclUniqueId = std::array<char, DPT_BACKEND_NCCL_ID_BYTES>;

// Process 0's new unique id, on every process. Throws DPT_ERROR_COMMUNICATION (every process) when process 0
// could not create one, DPT_ERROR_TIMEOUT when the broadcast did not complete within timeout_seconds.
NcclUniqueId share_nccl_unique_id(const dpt_backend_v2 &api, const World &world, double timeout_seconds);

// This process's place among the global ranks.
struct NcclRanks {
  int world_ranks = 0;  // GPUs of every process together
  int first_rank = 0;   // global rank of this process's first GPU
};
// Throws DPT_ERROR_INVALID_ARGUMENT (every process) when a process has no GPU.
NcclRanks nccl_world_ranks(const World &world, size_t local_count, double timeout_seconds);

// Destroys the communicator through the module that made it.
struct BackendCommDeleter {
  const dpt_backend_v2 *api = nullptr;
  void operator()(dpt_backend_comm *comm) const {
    if (api != nullptr) api->comm_destroy(comm);
  }
};
using BackendComm = std::unique_ptr<dpt_backend_comm, BackendCommDeleter>;

// Steps 1 to 3 above: ordinals are this process's GPUs (distinct, at least one), local rank r on
// ordinals[r]; the ranks into *ranks when given. Use the result with api.comm_all_reduce (every process
// with the same buffer counts).
BackendComm create_nccl_world_comm(const dpt_backend_v2 &api, const World &world,
                                   const std::vector<int> &ordinals, double timeout_seconds,
                                   NcclRanks *ranks = nullptr);

}  // namespace dpt
