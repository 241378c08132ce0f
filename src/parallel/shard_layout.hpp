// Which parameters each device of a trainer owns when the optimizer is sharded (ZeRO stage 1,
// TrainerConfig::shard): a contiguous range of the flat parameter vector per device, cut at whole norm
// blocks (optim/optimizer.hpp's kNormBlock, 16 KiB) so that each device can compute the gradient norm of
// its range and the sum of the ranges' norms is the unsharded norm, bit for bit. The ranges are as even as
// whole blocks allow; a model smaller than a block per device leaves some devices with nothing to own.
// Unsharded, every device owns the whole vector.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace dpt {

class ShardLayout {
 public:
  ShardLayout() = default;
  ShardLayout(size_t count, size_t ranks, bool sharded);
  // Given ranges (a pipeline's stages: cut at node boundaries, not at norm blocks): ranks + 1 ascending
  // offsets from 0 to count.
  ShardLayout(size_t count, std::vector<size_t> bounds)
      : count_(count), ranks_(bounds.size() - 1), sharded_(true), bounds_(std::move(bounds)) {}

  bool sharded() const { return sharded_; }
  size_t ranks() const { return ranks_; }
  size_t count() const { return count_; }
  size_t begin(size_t rank) const { return sharded_ ? bounds_[rank] : 0; }
  size_t end(size_t rank) const { return sharded_ ? bounds_[rank + 1] : count_; }
  size_t size(size_t rank) const { return end(rank) - begin(rank); }
  // Sharded: ranks + 1 ascending offsets, from 0 to count; rank r owns [bounds[r], bounds[r + 1]).
  const std::vector<size_t> &bounds() const { return bounds_; }

 private:
  size_t count_ = 0, ranks_ = 1;
  bool sharded_ = false;
  std::vector<size_t> bounds_;
};

}  // namespace dpt
