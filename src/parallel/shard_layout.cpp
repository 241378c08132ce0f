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

std::vector<ShardPiece> pieces_over_processes(const ShardLayout &local,
                                              const std::vector<size_t> &process_devices) {
  std::vector<size_t> cuts;
  for (size_t devices : process_devices) {
    const ShardLayout layout(local.count(), devices, true);
    cuts.insert(cuts.end(), layout.bounds().begin(), layout.bounds().end());
  }
  cuts.push_back(0);
  cuts.push_back(local.count());
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<ShardPiece> pieces;
  size_t owner = 0;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    while (local.end(owner) <= cuts[i]) ++owner;
    pieces.push_back({cuts[i], cuts[i + 1], owner});
  }
  return pieces;
}

}  // namespace dpt
