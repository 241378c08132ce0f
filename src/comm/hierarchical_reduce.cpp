#include "comm/hierarchical_reduce.hpp"

#include <algorithm>

#include "core/platform.hpp"

namespace dpt {

double hierarchical_all_reduce(ThreadCollective &local, const World *world, size_t rank, float *buffer,
                               size_t begin, size_t end, AllReduceAlgorithm algorithm, double timeout_seconds,
                               WireType wire) {
  double seconds = local.all_reduce_range(rank, buffer, begin, end, algorithm, wire);
  if (world == nullptr) return seconds;
  const double t0 = platform::now_seconds();
  if (rank == 0) world->all_reduce(buffer + begin, end - begin, timeout_seconds, wire);
  local.broadcast(rank, buffer + begin, end - begin, 0);
  return seconds + platform::now_seconds() - t0;
}

double hierarchical_reduce_scatter(ThreadCollective &local, const World &world, size_t rank, float *buffer,
                                   size_t begin, size_t end, const size_t *spans, const size_t *to_first,
                                   AllReduceAlgorithm algorithm, double timeout_seconds, WireType wire) {
  double seconds = local.reduce_scatter_range(rank, buffer, begin, end, to_first, algorithm, wire);
  const double t0 = platform::now_seconds();
  if (rank == 0) world.reduce_scatter(buffer + begin, begin, end, spans, timeout_seconds, wire);
  const size_t lo = std::clamp(spans[world.rank()], begin, end);
  const size_t hi = std::clamp(spans[world.rank() + 1], begin, end);
  local.broadcast(rank, buffer + lo, hi - lo, 0);
  return seconds + platform::now_seconds() - t0;
}

}  // namespace dpt
