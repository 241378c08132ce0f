// The StatisticsReducer of CPU devices (graph/pass_info.hpp): batch statistics summed over the trainer's
// device threads (the DeviceGroup's ThreadCollective, aborted with the group when a peer fails or the
// deadline passes), then on device 0 over the MPI processes (World, with the trainer's timeout) and copied
// back to the other devices: the same bits on every replica of every process.
#pragma once

#include "comm/thread_collective.hpp"
#include "comm/world.hpp"
#include "graph/pass_info.hpp"

namespace dpt {

class HostStatisticsReducer final : public StatisticsReducer {
 public:
  HostStatisticsReducer(ThreadCollective &local, const World *world, double timeout_seconds)
      : local_(local), world_(world), timeout_seconds_(timeout_seconds) {}

  void all_reduce(size_t rank, double *values, size_t count) override {
    local_.all_reduce_doubles(rank, values, count);
    if (world_ == nullptr) return;
    if (rank == 0) world_->all_reduce(values, count, timeout_seconds_);
    local_.broadcast(rank, reinterpret_cast<float *>(values), 2 * count, 0);
  }

 private:
  ThreadCollective &local_;
  const World *world_;
  double timeout_seconds_;
};

}  // namespace dpt
