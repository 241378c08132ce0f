#include "parallel/parameter_owners.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"

namespace dpt {

ParameterOwners::ParameterOwners(const std::vector<std::unique_ptr<Replica>> &replicas,
                                 const ShardLayout &shards, WorldPlacement placement)
    : shards_(shards), first_(shards.first()) {
  for (const auto &r : replicas) ranges_.push_back(r->params.data());
  if (placement.world == nullptr || shards.ranks() == replicas.size()) return;  // every owner is here
  placement_ = std::move(placement);
  const World &world = *placement_.world;
  const std::vector<size_t> &first = placement_.process_first;
  process_of_.resize(shards.ranks());
  for (size_t p = 0; p + 1 < first.size(); ++p)
    std::fill(process_of_.begin() + first[p], process_of_.begin() + first[p + 1], p);
  world.open_window();
  addresses_.assign(shards.ranks(), 0);
  for (size_t rank = 0; rank < ranges_.size(); ++rank)
    addresses_[first_ + rank] = world.expose(ranges_[rank], shards.size(rank) * sizeof(float));
  // Every process's addresses to every process (a broadcast rooted at each process in turn).
  for (size_t p = 0; p + 1 < first.size(); ++p)
    if (first[p + 1] > first[p])
      world.broadcast(addresses_.data() + first[p], (first[p + 1] - first[p]) * sizeof(uint64_t), p,
                      placement_.timeout_seconds);
}

// Collective: a process's ranges go only once nobody reads them (another process may still be in a pass,
// or reading the parameters, when this one destroys its trainer).
ParameterOwners::~ParameterOwners() {
  if (placement_.world == nullptr) return;
  std::vector<void *> exposed;
  for (size_t rank = 0; rank < ranges_.size(); ++rank)
    if (addresses_[first_ + rank] != 0) exposed.push_back(ranges_[rank]);
  try {
    placement_.world->withdraw(exposed, placement_.timeout_seconds);
  } catch (const Error &) {  // a process stalled or MPI broke: the job is out of step, nothing to report to
  }
}

void ParameterOwners::copy(float *dst, size_t begin, size_t end) const {
  const std::vector<size_t> &bounds = shards_.bounds();
  for (size_t device = 0; device + 1 < bounds.size(); ++device) {
    const size_t lo = std::max(begin, bounds[device]), hi = std::min(end, bounds[device + 1]);
    if (lo >= hi) continue;
    float *to = dst + (lo - begin);
    const size_t offset = lo - bounds[device], bytes = (hi - lo) * sizeof(float);
    if (local(device))
      std::memcpy(to, ranges_[device - first_] + offset, bytes);
    else
      placement_.world->get(to, bytes, process_of_[device], addresses_[device] + offset * sizeof(float),
                            placement_.timeout_seconds);
  }
}

void ParameterOwners::publish() const {
  if (placement_.world != nullptr) placement_.world->publish(placement_.timeout_seconds);
}

}  // namespace dpt
