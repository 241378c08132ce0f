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

ProcessRoutes process_routes(const std::vector<std::vector<size_t>> &process_cuts, size_t process) {
  const size_t processes = process_cuts.size();
  const size_t count = process_cuts[0].back();
  std::vector<size_t> first(1, 0), cuts;
  for (const std::vector<size_t> &c : process_cuts) {
    first.push_back(first.back() + c.size() - 1);
    cuts.insert(cuts.end(), c.begin(), c.end());
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  ProcessRoutes routes;
  routes.reduce_bounds.assign(first.back() + 1, 0);
  routes.first_rank = first[process];
  std::vector<size_t> owner(processes, 0);  // per process, the rank holding the current piece
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    const size_t begin = cuts[i], end = cuts[i + 1];
    for (size_t p = 0; p < processes; ++p)
      while (process_cuts[p][owner[p] + 1] <= begin) ++owner[p];
    size_t root = 0;  // the process whose even share [count p / P, count (p + 1) / P) holds the start
    while (root + 1 < processes && begin >= count * (root + 1) / processes) ++root;
    const size_t root_rank = first[root] + owner[root];
    for (size_t g = root_rank + 1; g <= first.back(); ++g) routes.reduce_bounds[g] = end;
    for (size_t p = 0; p < processes; ++p) {
      if (p == root) continue;
      if (process == root)
        routes.messages.push_back({owner[root], first[p] + owner[p], false, begin, end});
      else if (process == p)
        routes.messages.push_back({owner[p], root_rank, true, begin, end});
    }
  }
  return routes;
}

ProcessRoutes process_routes(size_t count, const std::vector<size_t> &process_devices, size_t process) {
  std::vector<std::vector<size_t>> cuts;
  for (size_t devices : process_devices) {
    const ShardLayout layout(count, devices, true);
    cuts.push_back(layout.sharded() ? layout.bounds() : std::vector<size_t>{0, count});
  }
  return process_routes(cuts, process);
}

}  // namespace dpt
