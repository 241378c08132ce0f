// Where each range of sharded parameters (ZeRO stage 3) lives, and reading any span of the parameters from
// its owners. Within a process the owners are the replicas: a read into a replica's memory is a copy by that
// replica's kernels (a memcpy on CPU devices, whose buffers are shared; a peer copy on the replica's stream
// on GPUs), a read into host memory one by the owner's kernels. Sharded across every device of every MPI
// process (the world scope), the ranges of the other processes' devices are read with one-sided gets
// (World::get): this process exposes its replicas' ranges in the World's window and learns every device's
// address once, when it is built; afterwards a read, from any device thread, needs nothing of the owner
// process. The owners write their ranges only between passes (the update, a load), and publish them
// (World::publish) before anybody reads again. On GPUs (host_staging: MPI reads and writes host memory
// only) the window exposes a host copy of each range, which publish refreshes from the GPU first, and the
// other processes' parts are read into host memory and copied onto the reading GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "comm/world.hpp"
#include "parallel/replica.hpp"
#include "parallel/shard_layout.hpp"

namespace dpt {

// Across processes: the World, the first device of every process (world size + 1 offsets: process p's
// devices are the layout's [first[p], first[p + 1])), and how long a read may wait.
struct WorldPlacement {
  const World *world = nullptr;
  std::vector<size_t> process_first;
  double timeout_seconds = 0;
  bool host_staging = false;  // the replicas' memory is not the host's (GPUs)
};

class ParameterOwners {
 public:
  // replicas: this process's, each holding its range of shards. Across processes (placement.world set and
  // the layout spanning other processes' devices): collective, exposes the replicas' ranges and learns
  // everybody's addresses.
  ParameterOwners(const std::vector<std::unique_ptr<Replica>> &replicas, const ShardLayout &shards,
                  WorldPlacement placement);
  ~ParameterOwners();
  ParameterOwners(const ParameterOwners &) = delete;
  ParameterOwners &operator=(const ParameterOwners &) = delete;

  // dst [0, end - begin) = elements [begin, end) of the parameters, from every owner whose range meets them;
  // dst is in the memory of this process's replica `rank`, whose device thread calls it (on a GPU the copies
  // are queued on its stream: ordered before its later work).
  void copy(float *dst, size_t begin, size_t end, size_t rank) const;
  // The same into host memory, from any thread between passes; returns when the values are there.
  void copy_to_host(float *dst, size_t begin, size_t end) const;

  // copy() in two halves, to read ahead: start_copy starts the one-sided gets of the other processes'
  // parts, and on GPUs queues this process's parts on the reading replica's copy stream
  // (DeviceKernels::copy_device_ahead), which proceed while the caller computes; finish_copy waits for the
  // gets, and copies this process's parts (on GPUs: orders the replica's stream after their copies). A
  // started copy must be finished, also when it is no longer wanted (the gets and copies may write dst
  // until then); finish_copy leaves it inactive, also when it throws.
  struct PendingCopy {
    float *dst = nullptr;  // nullptr: inactive
    size_t begin = 0, end = 0, rank = 0;
    std::vector<void *> gets;
    float *staged = nullptr;   // host staging: the gets' destination, [begin, end) (rank's read-ahead buffer)
    bool local_ahead = false;  // this process's parts are queued on the copy stream
  };
  PendingCopy start_copy(float *dst, size_t begin, size_t end, size_t rank) const;
  void finish_copy(PendingCopy &pending) const;
  // Do some owners live in other processes?
  bool across_processes() const { return placement_.world != nullptr; }
  // Across processes: makes this process's writes to its ranges visible to every process's reads
  // (collective; a no-op within a process).
  void publish() const;

 private:
  bool local(size_t device) const { return device - first_ < ranges_.size(); }
  // part(device, lo, hi) for each owner's share [lo, hi) of [begin, end).
  template <typename Part>
  void for_each_part(size_t begin, size_t end, Part part) const;
  uint64_t remote_address(size_t device, size_t element) const {
    return addresses_[device] + (element - shards_.bounds()[device]) * sizeof(float);
  }

  const ShardLayout &shards_;
  size_t first_ = 0;                      // the layout's index of this process's first device
  std::vector<float *> ranges_;           // this process's replicas' parameter buffers: their ranges
  std::vector<DeviceKernels *> kernels_;  // and their kernels, which copy
  WorldPlacement placement_;              // world == nullptr: every owner is in this process
  std::vector<size_t> process_of_;        // per device of the layout
  std::vector<uint64_t> addresses_;       // per device of the layout: its range's address in its process
  // Host staging: per replica of this process, the host copy of its range the window exposes, and the host
  // buffer its reads from other processes land in.
  mutable std::vector<std::vector<float>> exposed_;  // (publish, const, refreshes it)
  // Host staging: per replica, where its one read ahead (start_copy) lands; grown once, kept.
  mutable std::vector<std::vector<float>> ahead_;
  mutable std::vector<std::vector<float>> staged_;
  // Host staging: the other processes' parts of [begin, end) into host memory at dst (waiting for them).
  void get_remote(float *dst, size_t begin, size_t end) const;
};

}  // namespace dpt
