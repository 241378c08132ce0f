// The StatisticsReducer of GPU replicas on distinct GPUs (graph/pass_info.hpp): batch statistics summed in
// device memory over NCCL (the gradient's communicator: this process's GPUs, and every process's in an MPI
// world), never through the host. The replicas' threads meet at a barrier (aborted with the device group
// when a peer fails or the deadline passes), then replica 0's thread runs one grouped float64 all-reduce
// for every replica of the process (a NCCL communicator's ranks are driven from one thread, as the
// gradient's are) while the others wait at a second barrier: the same bits on every replica.
#pragma once

#include <cstddef>
#include <vector>

#include "backend/cuda/collective.hpp"
#include "comm/thread_collective.hpp"
#include "graph/pass_info.hpp"

namespace dpt {

class CudaStatisticsReducer final : public StatisticsReducer {
 public:
  // local: the replicas' threads (rank r is collective's local rank r); collective: a NCCL communicator
  // (not shares_one_gpu()).
  CudaStatisticsReducer(ThreadCollective &local, CudaCollective &collective, double timeout_seconds)
      : local_(local), collective_(collective), timeout_seconds_(timeout_seconds), buffers_(local.ranks()) {}

  bool device_memory() const override { return true; }

  void all_reduce(size_t rank, double *values, size_t count) override {
    buffers_[rank] = values;
    local_.barrier(rank);  // every replica's statistics are queued on its stream, every buffer known
    if (rank == 0) collective_.all_reduce_doubles(buffers_, count, timeout_seconds_);
    local_.barrier(rank);  // the sums are in every replica's buffer
  }

 private:
  ThreadCollective &local_;
  CudaCollective &collective_;
  double timeout_seconds_;
  std::vector<double *> buffers_;
};

}  // namespace dpt
