#include "parallel/cuda_gradient_collective.hpp"

#include "core/platform.hpp"
#include "parallel/gradient_buckets.hpp"

namespace dpt {

CudaGradientCollective::CudaGradientCollective(const std::vector<std::unique_ptr<Replica>> &replicas,
                                               const ModelSpec &spec, size_t bucket_bytes, const World *world,
                                               double timeout_seconds, WireType wire)
    : timeout_(timeout_seconds), wire_(wire) {
  const bool processes = world != nullptr && world->size() > 1;
  size_t ranks = replicas.size();
  if (replicas.size() > 1 || processes) {
    std::vector<CudaKernels *> kernels;
    for (auto &r : replicas) kernels.push_back(static_cast<CudaKernels *>(r->kernels.get()));
    collective_ =
        std::make_unique<CudaCollective>(std::move(kernels), processes ? world : nullptr, timeout_seconds);
    ranks = collective_->ranks();
  }
  // The buckets are all-reduced in one NCCL group after backward.
  for (const GradientBucket &b : plan_buckets(spec, bucket_bytes)) buckets_.emplace_back(b.begin, b.end);
  for (auto &r : replicas) grads_.push_back(r->grads.data()), params_.push_back(r->params.data());
  const double k = double(ranks);
  bus_bytes_ = double(spec.parameter_count()) * sizeof(float) * 2.0 * (k - 1.0) / k;
  // A 16-bit wire over NCCL needs staging memory of the module's, which it allocates at its first
  // all-reduce: one all-reduce of the gradients (zeroed, so they stay zero) allocates it now, so that a GPU
  // without room fails the trainer's creation (DPT_ERROR_OUT_OF_MEMORY), not a step, after which the
  // trainer would refuse further work. It also makes NCCL connect the peers while all are known to be here.
  if (collective_ != nullptr && !collective_->shares_one_gpu() && wire_ != WireType::kF32)
    collective_->all_reduce(grads_, buckets_, timeout_, wire_);
}

// The summed gradients of every replica; overlap is never on (reduced is false).
void CudaGradientCollective::reduce_between_phases(bool /*reduced*/) {
  seconds_ = 0;
  if (collective_ == nullptr) return;
  const double t0 = platform::now_seconds();
  collective_->all_reduce(grads_, buckets_, timeout_, wire_);
  seconds_ = platform::now_seconds() - t0;
}

void CudaGradientCollective::gather_between_phases(const std::vector<size_t> &bounds) {
  if (collective_ != nullptr) collective_->all_gather(params_, bounds, timeout_);
}

}  // namespace dpt
