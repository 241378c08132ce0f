// Which parameters each device of a trainer owns when the optimizer is sharded (ZeRO stage 1,
// TrainerConfig::shard): a contiguous range of the flat parameter vector per device, cut at whole norm
// blocks (optim/optimizer.hpp's kNormBlock, 16 KiB) so that each device can compute the gradient norm of
// its range and the sum of the ranges' norms is the unsharded norm, bit for bit. The ranges are as even as
// whole blocks allow; a model smaller than a block per device leaves some devices with nothing to own.
// Unsharded, every device owns the whole vector. Sharded across the devices of every MPI process
// (DPT_SHARD_SCOPE_WORLD) the layout has a range per device of the job, and this process's devices own
// those from `first` on (the processes' devices in process order).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace dpt {

class ShardLayout {
 public:
  ShardLayout() = default;
  // ranks: every device sharing the vector; this process's rank r is the layout's first + r.
  ShardLayout(size_t count, size_t ranks, bool sharded, size_t first = 0);
  // A pipeline's ranges (its stages' parameters, cut at node boundaries; with a sharded optimizer each
  // stage's range cut among its replicas at whole norm blocks): bounds, ascending offsets from 0 to count,
  // one range between each two; this process's rank r owns range slots[r] (a stage's data-parallel
  // replicas share one range unless the optimizer is sharded). ranks: every device that owns a range, in
  // every process.
  ShardLayout(size_t count, std::vector<size_t> bounds, std::vector<size_t> slots, size_t ranks)
      : count_(count), ranks_(ranks), sharded_(true), bounds_(std::move(bounds)), slots_(std::move(slots)) {}

  bool sharded() const { return sharded_; }
  size_t ranks() const { return ranks_; }
  size_t count() const { return count_; }
  size_t begin(size_t rank) const { return sharded_ ? bounds_[slot(rank)] : 0; }
  size_t end(size_t rank) const { return sharded_ ? bounds_[slot(rank) + 1] : count_; }
  // The layout index of this process's first device (0 but across processes; not for a pipeline's).
  size_t first() const { return first_; }
  size_t size(size_t rank) const { return end(rank) - begin(rank); }
  // Rank owns a range that no lower rank of this process owns (false only for a pipeline stage's second
  // and later replicas when they share the stage's range).
  bool first_owner(size_t rank) const { return rank == 0 || slot(rank) != slot(rank - 1); }
  // Sharded: ascending offsets from 0 to count; rank r owns [bounds[slot(r)], bounds[slot(r) + 1]).
  const std::vector<size_t> &bounds() const { return bounds_; }

 private:
  size_t count_ = 0, ranks_ = 1;
  bool sharded_ = false;
  size_t first_ = 0;
  std::vector<size_t> bounds_;
  std::vector<size_t> slots_;  // a pipeline's: the range of each rank of this process

  size_t slot(size_t rank) const { return slots_.empty() ? first_ + rank : slots_[rank]; }
};

// Sharded within each process (the process scope) across processes whose device counts may differ: the
// pieces between every process's range cuts (process_devices: every process's device count), in offset
// order, each with the rank of this process whose range holds it (0 where `local` is not sharded: a
// process of one device, which shards nothing). Summed over the processes piece by piece, every
// process makes the same MPI calls.
struct ShardPiece {
  size_t begin, end, owner;
};
std::vector<ShardPiece> pieces_over_processes(const ShardLayout &local,
                                              const std::vector<size_t> &process_devices);

// The same sums over one communicator of every process's devices (GPUs: NCCL, global rank = the process's
// first rank + its local one), each device ending with the sums of its own range only: each piece between
// every process's cuts is reduced to its owner in one process (the one whose even share of the vector the
// piece starts in, so every process roots about 1/P of it), then sent from there to its owner in each other
// process. A rank's pieces are consecutive, so the reduce is one range per rank.
struct ProcessRoutes {
  std::vector<size_t> reduce_bounds;  // global ranks + 1 ascending offsets: the range each rank is root of
  size_t first_rank = 0;              // this process's first global rank
  struct Message {
    size_t local, peer;  // this process's rank, and the global rank on the other side
    bool receive;
    size_t begin, end;  // the piece, in the vector
  };
  std::vector<Message> messages;  // this process's sends and receives, in piece order
};
// process_cuts[p]: process p's ranks + 1 ascending offsets from 0 to the vector's length (empty ranges
// allowed); `process` is this one.
ProcessRoutes process_routes(const std::vector<std::vector<size_t>> &process_cuts, size_t process);
// Each process's ShardLayout over its process_devices[p] devices (one device: the whole vector).
ProcessRoutes process_routes(size_t count, const std::vector<size_t> &process_devices, size_t process);

}  // namespace dpt
