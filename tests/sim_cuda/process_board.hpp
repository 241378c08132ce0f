// The simulator's NCCL across processes (nccl_unique_id, comm_create_multi): the processes of one job meet on
// a POSIX shared-memory segment (the "board") that the unique id names. Each global rank has a slot of
// kChunk floats on it; an all-reduce goes through its buffers a chunk at a time: every process writes its
// ranks' chunks into their slots, waits until every rank has written, sums the slots in global rank order
// (as the in-process communicator sums its ranks) into its own ranks' buffers, and waits until every rank
// has read, so the slots can be written again. The waits are on a monotonic counter of arrivals in the
// segment, bounded by the call's timeout: a process that died or stalled leaves the others with
// DPT_BACKEND_ERROR_COMMUNICATION, as an aborted NCCL communicator does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dpt_sim {

class ProcessBoard {
 public:
  static constexpr size_t kChunk = size_t(1) << 18;  // floats per rank and round (1 MiB)

  // A new board name for nccl_unique_id: unique to this process and call.
  static std::string new_name();
  // Opens (or creates) the board `name` for world_ranks ranks, registers this process's local_count ranks
  // and waits up to timeout_seconds for every rank to join. nullptr with the reason in `error`.
  static ProcessBoard *join(const std::string &name, int world_ranks, int first_rank, int local_count,
                            double timeout_seconds, std::string &error);
  ~ProcessBoard();
  ProcessBoard(const ProcessBoard &) = delete;
  ProcessBoard &operator=(const ProcessBoard &) = delete;

  int world_ranks() const { return world_ranks_; }
  int first_rank() const { return first_rank_; }
  // Global rank r's slot.
  float *slot(int rank) const;
  // Arrives (this process's ranks at once) and waits until every rank of the job has arrived as often;
  // false when the deadline (steady-clock seconds) passed first.
  bool arrive_and_wait(double deadline_seconds);

 private:
  ProcessBoard() = default;
  struct Header;
  Header *header_ = nullptr;
  size_t bytes_ = 0;
  int world_ranks_ = 0, first_rank_ = 0, local_count_ = 0;
  uint64_t phases_ = 0;  // arrivals of this process so far
};

double steady_seconds();

}  // namespace dpt_sim
