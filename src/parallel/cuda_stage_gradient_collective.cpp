#include "parallel/cuda_stage_gradient_collective.hpp"

#include "core/platform.hpp"

namespace dpt {

CudaStageGradientCollective::CudaStageGradientCollective(
    const std::vector<std::unique_ptr<Replica>> &replicas, size_t replicas_per_stage, const World *world,
    double timeout_seconds, WireType wire, std::vector<std::vector<size_t>> parts)
    : timeout_(timeout_seconds), wire_(wire), width_(replicas_per_stage), parts_(std::move(parts)) {
  const bool processes = world != nullptr && world->size() > 1;
  if (width_ < 2 && !processes) return;
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
}

void CudaStageGradientCollective::reduce_between_phases(bool /*reduced*/) {
  seconds_ = 0;
  if (stages_.empty()) return;
  const double t0 = platform::now_seconds();
  for (size_t s = 0; s < stages_.size(); ++s)
    stages_[s]->all_reduce(grads_[s], {{0, floats_[s]}}, timeout_, wire_);
  seconds_ = platform::now_seconds() - t0;
}

void CudaStageGradientCollective::gather_between_phases(const std::vector<size_t> & /*bounds*/) {
  for (size_t s = 0; s < stages_.size() && !parts_.empty(); ++s)
    stages_[s]->all_gather(params_[s], parts_[s], timeout_);
}

// As NCCL's tests count an all-reduce: the stage's gradient bytes times 2 (R - 1) / R, R its ranks.
CudaStageGradientCollective::RankReduction CudaStageGradientCollective::rank_reduction(size_t rank,
                                                                                       bool) const {
  if (stages_.empty()) return {0, 0};
  const double r = double(ranks_);
  return {seconds_, double(floats_[rank / width_]) * sizeof(float) * 2.0 * (r - 1.0) / r};
}

}  // namespace dpt
