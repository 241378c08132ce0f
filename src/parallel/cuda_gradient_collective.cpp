#include "parallel/cuda_gradient_collective.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/platform.hpp"
#include "parallel/gradient_buckets.hpp"
#include "parallel/process_deliveries.hpp"

namespace dpt {

CudaGradientCollective::CudaGradientCollective(ThreadCollective &local,
                                               const std::vector<std::unique_ptr<Replica>> &replicas,
                                               const ModelSpec &spec, size_t bucket_bytes, const World *world,
                                               double timeout_seconds, WireType wire, TraceRecorder &trace,
                                               const ShardLayout *owners, ProcessRoutes routes)
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
  const bool nccl = collective_ != nullptr && !collective_->shares_one_gpu();
  // The owners of a sharded optimizer's ranges are the communicator's ranks: each range reduced to its owner.
  if (owners != nullptr && owners->sharded() && nccl && owners->bounds().size() == ranks + 1) {
    owners_ = owners;
    reduce_bounds_ = owners->bounds();
    first_rank_ = owners->first();
  }
  // The process scope across processes: each piece reduced to one of its owners, then sent to the others.
  if (owners != nullptr && nccl && !routes.reduce_bounds.empty()) {
    DPT_REQUIRE(
        routes.reduce_bounds.size() == ranks + 1 && routes.reduce_bounds.back() == spec.parameter_count(),
        DPT_ERROR_INTERNAL, "the process scope's routes do not fit the communicator");
    owners_ = owners;
    reduce_bounds_ = std::move(routes.reduce_bounds);
    first_rank_ = routes.first_rank;
    deliveries_ = deliveries_within(routes.messages, grads_);
    // Reduced bucket by bucket beside backward: each bucket's part of the messages sent on right after its
    // reduce, on the communication streams too.
    for (size_t b = 0; overlap_ && b < buckets_.size(); ++b)
      bucket_deliveries_.push_back(
          deliveries_within(routes.messages, grads_, buckets_[b].first, buckets_[b].second));
  }
  if (owners_ != nullptr) {
    parts_.resize(ranks + 1);
    sends_.resize(replicas.size());
    recvs_.resize(replicas.size());
  }
  const double k = double(ranks);
  // As NCCL's tests count them: an all-reduce 2 (K - 1) / K of the bytes, a reduce-scatter (K - 1) / K; the
  // process scope's deliveries add what a replica sends, on average over the job ((P - 1) / P of its range:
  // half of this process's sends and receives, which balance over the job).
  bus_bytes_ =
      double(spec.parameter_count()) * sizeof(float) * (owners_ != nullptr ? 1.0 : 2.0) * (k - 1.0) / k;
  for (const dpt_backend_message &m : deliveries_)
    bus_bytes_ += double(m.count) * sizeof(float) / (2.0 * double(replicas.size()));
  // A 16-bit wire over NCCL needs staging memory of the module's, which it allocates at its first
  // all-reduce: one all-reduce of the gradients (zeroed, so they stay zero) allocates it now, so that a GPU
  // without room fails the trainer's creation (DPT_ERROR_OUT_OF_MEMORY), not a step, after which the
  // trainer would refuse further work; it holds any one bucket, which is what a started bucket takes. It
  // also makes NCCL connect the peers while all are known to be here.
  // Reduced to owners, each bucket so (a part may be a whole bucket: its staging is 2 K times its length).
  if (collective_ != nullptr && !collective_->shares_one_gpu() && wire_ != WireType::kF32) {
    if (owners_ == nullptr) collective_->all_reduce(grads_, buckets_, timeout_, wire_);
    for (size_t b = 0; owners_ != nullptr && b < buckets_.size(); ++b)
      reduce(buckets_[b].first, buckets_[b].second, false);
  }
}

void CudaGradientCollective::start_micro_batch(bool, bool) {
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
    reduce(buckets_[bucket].first, buckets_[bucket].second, true);
    if (!bucket_deliveries_.empty()) collective_->start_exchange(bucket_deliveries_[bucket]);
  }
  local_.barrier(rank);  // replica 0 is done with every context
}

void CudaGradientCollective::reduce(size_t begin, size_t end, bool started) {
  if (owners_ == nullptr) {
    one_bucket_[0] = {begin, end};
    if (started)
      collective_->start_all_reduce(grads_, one_bucket_, wire_);
    else
      collective_->all_reduce(grads_, one_bucket_, timeout_, wire_);
    return;
  }
  // Global rank g's part of [begin, end), from `begin`; this process's replica r is rank first + r.
  const std::vector<size_t> &bounds = reduce_bounds_;
  for (size_t g = 0; g < bounds.size(); ++g) parts_[g] = std::clamp(bounds[g], begin, end) - begin;
  for (size_t r = 0; r < grads_.size(); ++r) {
    const size_t g = first_rank_ + r;
    sends_[r] = grads_[r] + begin;
    recvs_[r] = parts_[g + 1] > parts_[g] ? grads_[r] + begin + parts_[g] : nullptr;  // (in place)
  }
  if (started)
    collective_->start_reduce_ranges(sends_, recvs_, parts_, wire_);
  else
    collective_->reduce_ranges(sends_, recvs_, parts_, timeout_, wire_);
}

void CudaGradientCollective::deliver() {
  if (!deliveries_.empty()) collective_->exchange(deliveries_, timeout_);
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
    collective_->wait_started(timeout_);  // (the process scope's deliveries too: started per bucket)
    const double end = platform::now_seconds();
    exposed_seconds_ = end - wait;
    seconds_ = end - first_start_;
  }
  local_.barrier(rank);  // every replica's stream is ordered after the sums
  trace_.record(TraceRecorder::communication_row(rank),
                owners_ != nullptr ? TraceKind::kReduceScatter : TraceKind::kAllReduce, 0, first_start_,
                first_start_ + seconds_);
}

// The summed gradients of every replica, unless backward reduced them.
void CudaGradientCollective::reduce_between_phases(bool reduced) {
  if (reduced) return;
  seconds_ = exposed_seconds_ = 0;
  if (collective_ == nullptr) return;
  const double t0 = platform::now_seconds();
  if (owners_ != nullptr) {
    reduce(0, owners_->count(), false);  // (one reduce of the whole vector: the buckets are its pieces)
    deliver();
  } else
    collective_->all_reduce(grads_, buckets_, timeout_, wire_);
  seconds_ = exposed_seconds_ = platform::now_seconds() - t0;
}

void CudaGradientCollective::gather_between_phases(const std::vector<size_t> &bounds) {
  if (collective_ != nullptr) collective_->all_gather(params_, bounds, timeout_);
}

}  // namespace dpt
