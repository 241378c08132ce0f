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
  // A pipeline's ranges (its stages' parameters: cut at node boundaries, not at norm blocks): bounds, S + 1
  // ascending offsets from 0 to count; each range is owned by `replicas` consecutive ranks (a stage's data
  // parallel replicas), S * replicas ranks in all.
  ShardLayout(size_t count, std::vector<size_t> bounds, size_t replicas)
      : count_(count),
        ranks_((bounds.size() - 1) * replicas),
        sharded_(true),
        replicas_(replicas),
        bounds_(std::move(bounds)) {}

  bool sharded() const { return sharded_; }
  size_t ranks() const { return ranks_; }
  size_t count() const { return count_; }
  size_t begin(size_t rank) const { return sharded_ ? bounds_[first_ + rank / replicas_] : 0; }
  size_t end(size_t rank) const { return sharded_ ? bounds_[first_ + rank / replicas_ + 1] : count_; }
  // The layout index of this process's first device (0 but across processes).
  size_t first() const { return first_; }
  // Ranks that own the same range (1 but in a pipeline with data-parallel replicas of each stage).
  size_t replicas() const { return replicas_; }
  size_t size(size_t rank) const { return end(rank) - begin(rank); }
  // Sharded: ranks / replicas + 1 ascending offsets, from 0 to count; rank r owns
  // [bounds[first + r / replicas], bounds[first + r / replicas + 1]).
  const std::vector<size_t> &bounds() const { return bounds_; }

 private:
  size_t count_ = 0, ranks_ = 1;
  bool sharded_ = false;
  size_t replicas_ = 1;
  size_t first_ = 0;
  std::vector<size_t> bounds_;
};

}  // namespace dpt
