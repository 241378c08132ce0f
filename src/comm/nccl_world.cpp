#include "comm/nccl_world.hpp"

#include <cstring>
#include <string>

#include "core/error.hpp"

namespace dpt {

namespace {

// What process 0 broadcasts: the id, or why there is none.
struct IdMessage {
  char ok = 0;
  NcclUniqueId id{};
  char error[383] = "";
};

dpt_status status_of(int rc) {
  switch (rc) {
    case DPT_BACKEND_ERROR_INVALID_ARGUMENT:
      return DPT_ERROR_INVALID_ARGUMENT;
    case DPT_BACKEND_ERROR_OUT_OF_MEMORY:
      return DPT_ERROR_OUT_OF_MEMORY;
    case DPT_BACKEND_ERROR_COMMUNICATION:
      return DPT_ERROR_COMMUNICATION;
    default:
      return DPT_ERROR_DEVICE;
  }
}

}  // namespace

NcclUniqueId share_nccl_unique_id(const dpt_backend_v2 &api, const World &world, double timeout_seconds) {
  IdMessage message;
  if (world.rank() == 0) {
    const int rc = api.nccl_unique_id(message.id.data(), message.error, sizeof message.error);
    message.ok = rc == DPT_BACKEND_OK ? 1 : 0;
  }
  world.broadcast(&message, sizeof message, 0, timeout_seconds);
  message.error[sizeof message.error - 1] = '\0';
  DPT_REQUIRE(message.ok == 1, DPT_ERROR_COMMUNICATION,
              std::string("process 0 could not create a NCCL unique id: ") + message.error);
  return message.id;
}

NcclRanks nccl_world_ranks(const World &world, size_t local_count, double timeout_seconds) {
  std::vector<double> counts(world.size(), 0.0);
  counts[world.rank()] = double(local_count);
  world.all_reduce(counts.data(), counts.size(), timeout_seconds);
  NcclRanks ranks;
  for (size_t p = 0; p < counts.size(); ++p) {
    DPT_REQUIRE(counts[p] >= 1.0, DPT_ERROR_INVALID_ARGUMENT,
                "process " + std::to_string(p) + " of the MPI job has no GPU for the NCCL communicator");
    if (p < world.rank()) ranks.first_rank += int(counts[p]);
    ranks.world_ranks += int(counts[p]);
  }
  return ranks;
}

BackendComm create_nccl_world_comm(const dpt_backend_v2 &api, const World &world,
                                   const std::vector<int> &ordinals, double timeout_seconds,
                                   NcclRanks *ranks_out) {
  const NcclRanks ranks = nccl_world_ranks(world, ordinals.size(), timeout_seconds);
  if (ranks_out != nullptr) *ranks_out = ranks;
  const NcclUniqueId id = share_nccl_unique_id(api, world, timeout_seconds);
  dpt_backend_comm *comm = nullptr;
  char error[512] = "";
  const int rc = api.comm_create_multi(id.data(), ranks.world_ranks, ranks.first_rank, int(ordinals.size()),
                                       ordinals.data(), &comm, error, sizeof error);
  DPT_REQUIRE(rc == DPT_BACKEND_OK, status_of(rc), "process " + std::to_string(world.rank()) + ": " + error);
  return BackendComm(comm, BackendCommDeleter{&api});
}

}  // namespace dpt
