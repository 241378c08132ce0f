#include "parallel/parameter_owners.hpp"

#include <algorithm>
#include <exception>
#include <utility>

#include "core/error.hpp"

namespace dpt {

ParameterOwners::ParameterOwners(const std::vector<std::unique_ptr<Replica>> &replicas,
                                 const ShardLayout &shards, WorldPlacement placement)
    : shards_(shards), first_(shards.first()) {
  for (const auto &r : replicas) ranges_.push_back(r->params.data()), kernels_.push_back(r->kernels.get());
  if (placement.world == nullptr || shards.ranks() == replicas.size()) return;  // every owner is here
  placement_ = std::move(placement);
  const World &world = *placement_.world;
  const std::vector<size_t> &first = placement_.process_first;
  process_of_.resize(shards.ranks());
  for (size_t p = 0; p + 1 < first.size(); ++p)
    std::fill(process_of_.begin() + first[p], process_of_.begin() + first[p + 1], p);
  world.open_window();
  addresses_.assign(shards.ranks(), 0);
  if (placement_.host_staging) {
    staged_.resize(ranges_.size());
    ahead_.resize(ranges_.size());
    for (size_t rank = 0; rank < ranges_.size(); ++rank) exposed_.emplace_back(shards.size(rank));
  }
  for (size_t rank = 0; rank < ranges_.size(); ++rank)
    addresses_[first_ + rank] = world.expose(placement_.host_staging ? exposed_[rank].data() : ranges_[rank],
                                             shards.size(rank) * sizeof(float));
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
    if (addresses_[first_ + rank] != 0)
      exposed.push_back(placement_.host_staging ? exposed_[rank].data() : ranges_[rank]);
  try {
    placement_.world->withdraw(exposed, placement_.timeout_seconds);
  } catch (const Error &) {  // a process stalled or MPI broke: the job is out of step, nothing to report to
  }
}

template <typename Part>
void ParameterOwners::for_each_part(size_t begin, size_t end, Part part) const {
  const std::vector<size_t> &bounds = shards_.bounds();
  for (size_t device = 0; device + 1 < bounds.size(); ++device) {
    const size_t lo = std::max(begin, bounds[device]), hi = std::min(end, bounds[device + 1]);
    if (lo < hi) part(device, lo, hi);
  }
}

void ParameterOwners::get_remote(float *dst, size_t begin, size_t end) const {
  for_each_part(begin, end, [&](size_t device, size_t lo, size_t hi) {
    if (!local(device))
      placement_.world->get(dst + (lo - begin), (hi - lo) * sizeof(float), process_of_[device],
                            remote_address(device, lo), placement_.timeout_seconds);
  });
}

void ParameterOwners::copy(float *dst, size_t begin, size_t end, size_t rank) const {
  if (placement_.host_staging) {  // the other processes' parts through host memory, then onto the GPU
    std::vector<float> &staged = staged_[rank];
    if (staged.size() < end - begin) staged.resize(end - begin);
    get_remote(staged.data(), begin, end);
    for_each_part(begin, end, [&](size_t device, size_t lo, size_t hi) {
      if (!local(device))
        kernels_[rank]->copy_to_device(dst + (lo - begin), staged.data() + (lo - begin), hi - lo);
    });
    kernels_[rank]->synchronize();  // the host buffer takes the next read
  }
  for_each_part(begin, end, [&](size_t device, size_t lo, size_t hi) {
    float *to = dst + (lo - begin);
    if (local(device))
      kernels_[rank]->copy_device(to, ranges_[device - first_] + (lo - shards_.bounds()[device]), hi - lo);
    else if (!placement_.host_staging)
      placement_.world->get(to, (hi - lo) * sizeof(float), process_of_[device], remote_address(device, lo),
                            placement_.timeout_seconds);
  });
}

void ParameterOwners::copy_to_host(float *dst, size_t begin, size_t end) const {
  for_each_part(begin, end, [&](size_t device, size_t lo, size_t hi) {
    float *to = dst + (lo - begin);
    if (local(device)) {
      DeviceKernels &owner = *kernels_[device - first_];
      owner.copy_to_host(to, ranges_[device - first_] + (lo - shards_.bounds()[device]), hi - lo);
      owner.synchronize();
    } else {
      placement_.world->get(to, (hi - lo) * sizeof(float), process_of_[device], remote_address(device, lo),
                            placement_.timeout_seconds);
    }
  });
}

ParameterOwners::PendingCopy ParameterOwners::start_copy(float *dst, size_t begin, size_t end,
                                                         size_t rank) const {
  PendingCopy pending{dst, begin, end, rank, {}, nullptr};
  if (placement_.host_staging) {  // (one read ahead per replica at a time: the gatherer's lanes)
    std::vector<float> &ahead = ahead_[rank];
    if (ahead.size() < end - begin) ahead.resize(end - begin);
    pending.staged = ahead.data();
  }
  float *into = placement_.host_staging ? pending.staged : dst;  // the gets' destination
  DeviceKernels &k = *kernels_[rank];
  pending.local_ahead = k.copies_beside_compute();
  try {
    for_each_part(begin, end, [&](size_t device, size_t lo, size_t hi) {
      if (local(device)) {
        if (pending.local_ahead)
          k.copy_device_ahead(dst + (lo - begin), ranges_[device - first_] + (lo - shards_.bounds()[device]),
                              hi - lo);
        return;
      }
      void *get = placement_.world->start_get(into + (lo - begin), (hi - lo) * sizeof(float),
                                              process_of_[device], remote_address(device, lo));
      if (get != nullptr) pending.gets.push_back(get);
    });
  } catch (...) {
    finish_copy(pending);  // the gets already started (throws their first error, else rethrown below)
    throw;
  }
  return pending;
}

void ParameterOwners::finish_copy(PendingCopy &pending) const {
  if (pending.dst == nullptr) return;
  PendingCopy done = std::move(pending);
  pending = PendingCopy{};
  DeviceKernels &k = *kernels_[done.rank];
  std::exception_ptr first;
  if (done.local_ahead) try {  // (device-side: first, so that no failed get leaves the copies unjoined)
      k.join_copies_ahead();
    } catch (...) {
      first = std::current_exception();
    }
  for (void *get : done.gets) try {
      placement_.world->finish_get(get, placement_.timeout_seconds);
    } catch (...) {
      if (first == nullptr) first = std::current_exception();
    }
  if (first != nullptr) std::rethrow_exception(first);
  for_each_part(done.begin, done.end, [&](size_t device, size_t lo, size_t hi) {
    float *to = done.dst + (lo - done.begin);
    if (local(device)) {
      if (!done.local_ahead)
        k.copy_device(to, ranges_[device - first_] + (lo - shards_.bounds()[device]), hi - lo);
    } else if (placement_.host_staging) {
      k.copy_to_device(to, done.staged + (lo - done.begin), hi - lo);
    }
  });
  if (placement_.host_staging) k.synchronize();  // the read-ahead buffer takes the next read
}

void ParameterOwners::publish() const {
  if (placement_.world == nullptr) return;
  for (size_t rank = 0; rank < exposed_.size(); ++rank)  // host staging: the window's copies, from the GPUs
    if (!exposed_[rank].empty()) {
      kernels_[rank]->copy_to_host(exposed_[rank].data(), ranges_[rank], exposed_[rank].size());
      kernels_[rank]->synchronize();
    }
  placement_.world->publish(placement_.timeout_seconds);
}

}  // namespace dpt
