#include "parallel/cuda_gradient_collective.hpp"

#include "core/platform.hpp"
#include "parallel/gradient_buckets.hpp"

namespace dpt {

CudaGradientCollective::CudaGradientCollective(ThreadCollective &local,
                                               const std::vector<std::unique_ptr<Replica>> &replicas,
                                               const ModelSpec &spec, size_t bucket_bytes, const World *world,
                                               double timeout_seconds, WireType wire, TraceRecorder &trace)
    : local_(local), timeout_(timeout_seconds), wire_(wire), trace_(trace), lanes_(replicas.size()) {
  const bool processes = world != nullptr && world->size() > 1;
  size_t ranks = replicas.size();
  if (replicas.size() > 1 || processes) {
    std::vector<CudaKernels *> kernels;
    for (auto &r : replicas) kernels.push_back(static_cast<CudaKernels *>(r->kernels.get()));
    collective_ =
        std::make_unique<CudaCollective>(std::move(kernels), processes ? world : nullptr, timeout_seconds);
    ranks = collective_->ranks();
  }
  for (const GradientBucket &b : plan_buckets(spec, bucket_bytes)) {
    buckets_.emplace_back(b.begin, b.end);
    lowest_layer_.push_back(b.lowest_layer);
  }
  for (auto &r : replicas) grads_.push_back(r->grads.data()), params_.push_back(r->params.data());
  for (size_t rank = 0; rank < lanes_.size(); ++rank) lanes_[rank].owner = this, lanes_[rank].rank = rank;
  overlap_ = collective_ != nullptr && !collective_->shares_one_gpu() && buckets_.size() > 1;
  const double k = double(ranks);
  bus_bytes_ = double(spec.parameter_count()) * sizeof(float) * 2.0 * (k - 1.0) / k;
  // A 16-bit wire over NCCL needs staging memory of the module's, which it allocates at its first
  // all-reduce: one all-reduce of the gradients (zeroed, so they stay zero) allocates it now, so that a GPU
  // without room fails the trainer's creation (DPT_ERROR_OUT_OF_MEMORY), not a step, after which the
  // trainer would refuse further work; it holds any one bucket, which is what a started bucket takes. It
  // also makes NCCL connect the peers while all are known to be here.
  if (collective_ != nullptr && !collective_->shares_one_gpu() && wire_ != WireType::kF32)
    collective_->all_reduce(grads_, buckets_, timeout_, wire_);
}

void CudaGradientCollective::start_micro_batch(bool) {
  for (Lane &lane : lanes_) lane.started = 0;
}

void CudaGradientCollective::layer_done(void *context, size_t node) {
  Lane &lane = *static_cast<Lane *>(context);
  CudaGradientCollective &self = *lane.owner;
  while (lane.started < self.buckets_.size() && node <= self.lowest_layer_[lane.started])
    self.start(lane.rank, lane.started++);
}

void CudaGradientCollective::start(size_t rank, size_t bucket) {
  local_.barrier(rank);  // every replica's backward of the bucket is queued on its stream
  if (rank == 0) {
    if (bucket == 0) first_start_ = platform::now_seconds();
    one_bucket_[0] = buckets_[bucket];
    collective_->start_all_reduce(grads_, one_bucket_, wire_);
  }
  local_.barrier(rank);  // replica 0 is done with every context
}

BackwardHook CudaGradientCollective::backward_hook(size_t rank) {
  return BackwardHook{&layer_done, &lanes_[rank]};
}

// Buckets that backward did not reach (an empty or non-finite slice skips it) are started here, so that the
// peers' buckets complete; then replica 0 waits for them all.
void CudaGradientCollective::finish_backward(size_t rank) {
  Lane &lane = lanes_[rank];
  while (lane.started < buckets_.size()) start(rank, lane.started++);
  local_.barrier(rank);
  if (rank == 0) {
    const double wait = platform::now_seconds();
    collective_->wait_started(timeout_);
    const double end = platform::now_seconds();
    exposed_seconds_ = end - wait;
    seconds_ = end - first_start_;
  }
  local_.barrier(rank);  // every replica's stream is ordered after the sums
  trace_.record(TraceRecorder::communication_row(rank), TraceKind::kAllReduce, 0, first_start_,
                first_start_ + seconds_);
}

// The summed gradients of every replica, unless backward reduced them.
void CudaGradientCollective::reduce_between_phases(bool reduced) {
  if (reduced) return;
  seconds_ = exposed_seconds_ = 0;
  if (collective_ == nullptr) return;
  const double t0 = platform::now_seconds();
  collective_->all_reduce(grads_, buckets_, timeout_, wire_);
  seconds_ = exposed_seconds_ = platform::now_seconds() - t0;
}

void CudaGradientCollective::gather_between_phases(const std::vector<size_t> &bounds) {
  if (collective_ != nullptr) collective_->all_gather(params_, bounds, timeout_);
}

}  // namespace dpt
