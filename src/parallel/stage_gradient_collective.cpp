#include "parallel/stage_gradient_collective.hpp"

#include <algorithm>

#include "core/platform.hpp"

namespace dpt {

void StageGradientCollective::reduce_in_update(size_t rank, bool) {
  seconds_[rank] = 0;
  if (width_ == 1 && world_ == nullptr) return;
  DeviceBuffer &grads = replicas_[rank]->grads;
  const double start = platform::now_seconds();
  if (width_ > 1)
    group_.subgroup(rank / width_).all_reduce(rank % width_, grads.data(), grads.size(), algorithm_, wire_);
  if (world_ != nullptr) {
    ThreadCollective &local = group_.collective();
    local.barrier(rank);  // every stage's replicas hold the process's sum
    if (rank == 0)
      for (size_t first = 0; first < replicas_.size(); first += width_)
        world_->all_reduce(replicas_[first]->grads.data(), replicas_[first]->grads.size(), timeout_, wire_);
    local.barrier(rank);  // the sums over the processes are in
    if (rank % width_ != 0) {
      const DeviceBuffer &sum = replicas_[rank - rank % width_]->grads;
      std::copy(sum.data(), sum.data() + sum.size(), grads.data());
    }
  }
  seconds_[rank] = platform::now_seconds() - start;
  trace_.record(TraceRecorder::compute_row(rank), TraceKind::kAllReduce, 0, start, platform::now_seconds());
}

// The stages reduce at once, each its own range: the step waited for the slowest.
AllReduceTimes StageGradientCollective::times(bool) const {
  const double most = *std::max_element(seconds_.begin(), seconds_.end());
  return {most, most, most};
}

// The stage's all-reduce among its replicas; across P processes device 0 also all-reduces every stage's
// range (the whole gradient) over them.
StageGradientCollective::RankReduction StageGradientCollective::rank_reduction(size_t rank, bool) const {
  const double k = double(width_), bytes = double(replicas_[rank]->grads.size()) * sizeof(float);
  double moved = width_ > 1 ? bytes * 2.0 * (k - 1.0) / k : 0.0;
  if (world_ != nullptr && rank == 0) {
    double whole = 0;
    for (size_t first = 0; first < replicas_.size(); first += width_)
      whole += double(replicas_[first]->grads.size()) * sizeof(float);
    const double p = double(world_->size());
    moved += whole * 2.0 * (p - 1.0) / p;
  }
  return {seconds_[rank], moved};
}

}  // namespace dpt
