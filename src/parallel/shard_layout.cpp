#include "parallel/shard_layout.hpp"

#include <algorithm>

#include "optim/optimizer.hpp"

namespace dpt {

ShardLayout::ShardLayout(size_t count, size_t ranks, bool sharded, size_t first)
    : count_(count), ranks_(ranks), sharded_(sharded && ranks > 1), first_(first) {
  if (!sharded_) return;
  const size_t blocks = norm_blocks(count);
  for (size_t r = 0; r <= ranks; ++r) bounds_.push_back(std::min(count, r * blocks / ranks * kNormBlock));
}

}  // namespace dpt
