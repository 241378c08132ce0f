#include "parallel/cuda_stage_gradient_collective.hpp"

#include <algorithm>

#include "core/platform.hpp"

namespace dpt {

CudaStageGradientCollective::CudaStageGradientCollective(
    DeviceGroup &group, const std::vector<std::unique_ptr<Replica>> &replicas, size_t replicas_per_stage,
    const World *world, double timeout_seconds, WireType wire, std::vector<std::vector<size_t>> parts)
    : timeout_(timeout_seconds),
      wire_(wire),
      width_(replicas_per_stage),
      parts_(std::move(parts)),
      group_(group) {
  const bool processes = world != nullptr && world->size() > 1;
  if (width_ < 2 && !processes) return;
  first_rank_ = processes ? world->rank() * width_ : 0;  // (every process holds width_ replicas of a stage)
  for (size_t first = 0; first < replicas.size(); first += width_) {
    std::vector<CudaKernels *> kernels;
    std::vector<float *> grads, params;
    for (size_t r = first; r < first + width_; ++r) {
      kernels.push_back(static_cast<CudaKernels *>(replicas[r]->kernels.get()));
      grads.push_back(replicas[r]->grads.data());
      params.push_back(replicas[r]->params.data());
    }
    stages_.push_back(
        std::make_unique<CudaCollective>(std::move(kernels), processes ? world : nullptr, timeout_seconds));
    ranks_ = stages_.back()->ranks();
    grads_.push_back(std::move(grads));
    params_.push_back(std::move(params));
    floats_.push_back(replicas[first]->grads.size());
  }
  starts_.assign(stages_.size(), 0.0);
  ends_.assign(stages_.size(), 0.0);
  sends_.resize(stages_.size());
  recvs_.resize(stages_.size());
  ranges_.assign(stages_.size(), {{0, 0}});
}

void CudaStageGradientCollective::all_reduce_range(size_t s, size_t begin, size_t end) {
  ranges_[s][0] = {begin, end};
  stages_[s]->all_reduce(grads_[s], ranges_[s], timeout_, wire_);
}

void CudaStageGradientCollective::reduce_stage(size_t s) {
  if (reduces_to_owners(s))
    reduce_to_owners(s);
  else
    all_reduce_range(s, 0, floats_[s]);
}

void CudaStageGradientCollective::finish_backward(size_t rank) {
  const size_t s = rank / width_, member = rank % width_;
  // (One replica per stage in each process: no stage barrier, and the trainer makes no subgroups then.)
  ThreadCollective *stage = width_ > 1 ? &group_.subgroup(s) : nullptr;
  if (stage != nullptr) stage->barrier(member);  // every replica of the stage has queued its last backward
  if (member == 0) {
    starts_[s] = platform::now_seconds();
    reduce_stage(s);
    ends_[s] = platform::now_seconds();
  }
  if (stage != nullptr) stage->barrier(member);  // the stage's sums are in
}

void CudaStageGradientCollective::reduce_between_phases(bool reduced) {
  seconds_ = exposed_seconds_ = 0;
  if (stages_.empty()) return;
  if (reduced) {
    double last_start = 0, last_end = 0;
    for (size_t s = 0; s < stages_.size(); ++s) {
      seconds_ += ends_[s] - starts_[s];
      last_start = std::max(last_start, starts_[s]);
      last_end = std::max(last_end, ends_[s]);
    }
    exposed_seconds_ = last_end - last_start;
    return;
  }
  const double t0 = platform::now_seconds();
  for (size_t s = 0; s < stages_.size(); ++s) reduce_stage(s);
  seconds_ = exposed_seconds_ = platform::now_seconds() - t0;
}

// Rank g's part [parts[g], parts[g + 1]) of the stage's sums into its own gradient buffer, in place; the
// rest of a buffer keeps this replica's own values, which nothing reads (the norm and the update take the
// rank's part, a tied parameter's mirror is added into the source's owner).
void CudaStageGradientCollective::reduce_to_owners(size_t s) {
  const std::vector<size_t> &parts = parts_[s];
  std::vector<const float *> &sends = sends_[s];
  std::vector<float *> &recvs = recvs_[s];
  sends.assign(grads_[s].begin(), grads_[s].end());
  recvs.assign(width_, nullptr);
  for (size_t r = 0; r < width_; ++r) {
    const size_t g = first_rank_ + r;
    if (parts[g + 1] > parts[g]) recvs[r] = grads_[s][r] + parts[g];
  }
  stages_[s]->reduce_ranges(sends, recvs, parts, timeout_, wire_);
  const size_t range = parts.back();
  if (floats_[s] > range) all_reduce_range(s, range, floats_[s]);
}

void CudaStageGradientCollective::gather_between_phases(const std::vector<size_t> & /*bounds*/) {
  for (size_t s = 0; s < stages_.size() && !parts_.empty(); ++s)
    stages_[s]->all_gather(params_[s], parts_[s], timeout_);
}

// As NCCL's tests count an all-reduce: the stage's gradient bytes times 2 (R - 1) / R, R its ranks; a
// reduce to the parts' owners half that for the range (a reduce-scatter's (R - 1) / R).
CudaStageGradientCollective::RankReduction CudaStageGradientCollective::rank_reduction(size_t rank,
                                                                                       bool reduced) const {
  if (stages_.empty()) return {0, 0};
  const size_t s = rank / width_;
  const double seconds = reduced ? ends_[s] - starts_[s] : seconds_;  // the stage's own, or every stage's
  const double r = double(ranks_), all = double(floats_[s]) * sizeof(float);
  if (!reduces_to_owners(s)) return {seconds, all * 2.0 * (r - 1.0) / r};
  const double range = double(parts_[s].back()) * sizeof(float);
  return {seconds, range * (r - 1.0) / r + (all - range) * 2.0 * (r - 1.0) / r};
}

}  // namespace dpt
