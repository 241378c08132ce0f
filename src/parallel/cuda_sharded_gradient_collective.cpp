#include "parallel/cuda_sharded_gradient_collective.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "core/platform.hpp"

namespace dpt {

CudaShardedGradientCollective::CudaShardedGradientCollective(
    ThreadCollective &local, const std::vector<std::unique_ptr<Replica>> &replicas, const ModelSpec &spec,
    size_t bucket_bytes, const ShardLayout &shards, WireType wire, const World *world, bool world_scope,
    double timeout_seconds, TraceRecorder &trace)
    : local_(local),
      shards_(shards),
      timeout_(timeout_seconds),
      wire_(wire),
      trace_(trace),
      buckets_(plan_buckets(spec, bucket_bytes)),
      tied_(spec),
      lanes_(replicas.size()),
      seconds_(replicas.size(), 0.0) {
  const bool processes = world != nullptr && world->size() > 1;
  if (processes && !world_scope) world_ = world;  // the hybrid: within each process, then over the processes
  std::vector<CudaKernels *> cuda;
  for (auto &r : replicas) {
    cuda.push_back(static_cast<CudaKernels *>(r->kernels.get()));
    kernels_.push_back(r->kernels.get());
  }
  collective_ = std::make_unique<CudaCollective>(std::move(cuda), processes && world_scope ? world : nullptr,
                                                 timeout_seconds);
  bucket_of_node_ = bucket_of_nodes(spec, buckets_);
  for (const TiedSources::Source &t : tied_.sources()) {
    size_t b = 0;
    while (!(t.offset >= buckets_[b].begin && t.offset < buckets_[b].end)) ++b;
    tied_bucket_.push_back(b);
  }
  for (const Node &node : spec.nodes()) node_offsets_.push_back(node.param_offset);
  largest_ = largest_bucket(buckets_);
  const bool overlap = !collective_->shares_one_gpu();  // (set below, after the staging's first reduces)
  if (world_ != nullptr) host_.resize(shards.count());
  for (size_t rank = 0; rank < replicas.size(); ++rank) {
    slots_.emplace_back(replicas[rank]->kernels->memory(), (overlap ? 2 : 1) * largest_);
    if (!tied_.empty()) tied_grads_.emplace_back(replicas[rank]->kernels->memory(), tied_.floats());
    shard_gradients_.push_back(replicas[rank]->grads.data());
    params_.push_back(replicas[rank]->params.data());
    slot_pointers_.push_back(nullptr);
    lanes_[rank].owner = this;
    lanes_[rank].rank = rank;
  }
  // A 16-bit wire over NCCL needs the module's staging, which it grows at a collective's first need (never
  // while started reduces hold it): every bucket reduced once now, waiting (zeros into the zeroed gradient
  // ranges), grows it to its largest, so that a GPU without room fails the trainer's creation
  // (DPT_ERROR_OUT_OF_MEMORY), not a step, and no start of a step needs to grow it.
  if (!collective_->shares_one_gpu() && wire_ != WireType::kF32) {
    for (size_t rank = 0; rank < replicas.size(); ++rank) slots_[rank].zero();
    for (size_t b = 0; b < buckets_.size(); ++b) reduce_bucket(b);
  }
  overlap_ = overlap;
}

void CudaShardedGradientCollective::start_micro_batch(bool first_of_window, bool) {
  accumulate_ = !first_of_window;
  for (Lane &lane : lanes_) lane.opened = lane.reduced = 0, lane.probe = false;
  for (DeviceBuffer &t : tied_grads_) t.zero();  // (queued on each idle replica's stream)
  if (first_of_window) {
    std::fill(seconds_.begin(), seconds_.end(), 0.0);
    wait_seconds_ = span_seconds_ = 0;
  }
}

// The staging bucket is free: the reduction that last used it is ordered before anything queued now on the
// stream (overlapped: the join after the previous bucket's start, which waits for the bucket before it;
// otherwise NCCL: replica 0 waited for it; one GPU: the virtual all-reduce and the copies are ordered before
// anything queued later on the streams).
void CudaShardedGradientCollective::open_next(Lane &lane) {
  const size_t bucket = lane.opened;
  const GradientBucket &b = buckets_[bucket];
  DeviceKernels &k = *kernels_[lane.rank];
  float *slot = this->slot(lane.rank, bucket);
  k.memory().zero(slot, (b.end - b.begin) * sizeof(float));
  // The tying nodes' contributions to the sources in this bucket, where backward would have added them.
  for (size_t i = 0; i < tied_bucket_.size(); ++i)
    if (tied_bucket_[i] == bucket) {
      const TiedSources::Source &src = tied_.sources()[i];
      k.copy_device(slot + (src.offset - b.begin), tied_grads_[lane.rank].data() + src.packed, src.count);
    }
  ++lane.opened;
}

float *CudaShardedGradientCollective::gradients(void *context, size_t node) {
  Lane &lane = *static_cast<Lane *>(context);
  CudaShardedGradientCollective &self = *lane.owner;
  const size_t bucket = self.bucket_of_node_[node];
  while (lane.opened <= bucket) self.open_next(lane);
  return self.slot(lane.rank, bucket) + (self.node_offsets_[node] - self.buckets_[bucket].begin);
}

// The source's bucket comes at or after the tying node's in backward: open (the same bucket) or not yet.
float *CudaShardedGradientCollective::tied_gradients(void *context, size_t, size_t offset) {
  Lane &lane = *static_cast<Lane *>(context);
  CudaShardedGradientCollective &self = *lane.owner;
  const size_t i = self.tied_.index(offset), bucket = self.tied_bucket_[i];
  if (bucket < lane.opened) return self.slot(lane.rank, bucket) + (offset - self.buckets_[bucket].begin);
  return self.tied_grads_[lane.rank].data() + self.tied_.sources()[i].packed;
}

void CudaShardedGradientCollective::layer_done(void *context, size_t node) {
  Lane &lane = *static_cast<Lane *>(context);
  CudaShardedGradientCollective &self = *lane.owner;
  while (lane.reduced < self.buckets_.size() && node <= self.buckets_[lane.reduced].lowest_layer) {
    if (!lane.probe) self.reduce(lane.rank, lane.reduced);
    ++lane.reduced;
  }
}

void CudaShardedGradientCollective::reduce(size_t rank, size_t bucket) {
  const double start = platform::now_seconds();
  local_.barrier(rank);  // every replica's bucket is queued on its stream
  if (rank == 0) {
    if (bucket == 0) first_start_ = start;
    reduce_bucket(bucket);
  }
  local_.barrier(rank);  // every range holds its sums (or they are queued before anything later)
  const double end = platform::now_seconds();
  seconds_[rank] += end - start;
  trace_.record(TraceRecorder::compute_row(rank), TraceKind::kBucketReduceScatter, bucket, start, end);
}

float *CudaShardedGradientCollective::slot(size_t rank, size_t bucket) {
  return slots_[rank].data() + (overlap_ ? (bucket % 2) * largest_ : 0);
}

// Local rank r's part of bucket b: where it starts in the bucket, its length, where it lies in its range.
size_t CudaShardedGradientCollective::part(size_t r) const {
  return parts_[shards_.first() + r];
}

size_t CudaShardedGradientCollective::part_length(size_t r) const {
  return parts_[shards_.first() + r + 1] - parts_[shards_.first() + r];
}

float *CudaShardedGradientCollective::own(size_t r, const GradientBucket &b) const {
  return shard_gradients_[r] + (b.begin + part(r) - shards_.begin(r));
}

void CudaShardedGradientCollective::plan_parts(size_t bucket) {
  const GradientBucket &b = buckets_[bucket];
  const std::vector<size_t> &bounds = shards_.bounds();
  parts_.resize(bounds.size());  // global rank g's part of the bucket, offsets into it
  for (size_t g = 0; g < bounds.size(); ++g) parts_[g] = std::clamp(bounds[g], b.begin, b.end) - b.begin;
  for (size_t r = 0; r < kernels_.size(); ++r) slot_pointers_[r] = slot(r, bucket);
}

// A later micro-batch of the window: the bucket's sums (in each owner's staging) added into the ranges.
void CudaShardedGradientCollective::add_sums(size_t bucket) {
  plan_parts(bucket);
  const GradientBucket &b = buckets_[bucket];
  for (size_t r = 0; r < kernels_.size(); ++r)
    if (part_length(r) > 0) kernels_[r]->accumulate(own(r, b), slot_pointers_[r] + part(r), part_length(r));
}

void CudaShardedGradientCollective::reduce_bucket(size_t bucket) {
  plan_parts(bucket);
  const GradientBucket &b = buckets_[bucket];
  const size_t k = kernels_.size();
  if (collective_->shares_one_gpu()) {
    whole_bucket_[0] = {0, b.end - b.begin};
    collective_->all_reduce(slot_pointers_, whole_bucket_, timeout_, wire_);
  } else {
    sends_.assign(slot_pointers_.begin(), slot_pointers_.end());
    recvs_.assign(k, nullptr);
    for (size_t r = 0; r < k; ++r)
      if (part_length(r) > 0) recvs_[r] = accumulate_ ? slot_pointers_[r] + part(r) : own(r, b);
    if (overlap_) {
      // Started beside backward; the streams then wait for the bucket before it, whose staging the next
      // bucket reuses (and whose sums a later micro-batch adds now).
      collective_->start_reduce_ranges(sends_, recvs_, parts_, wire_);
      collective_->join_started(1);
      if (accumulate_ && bucket > 0) add_sums(bucket - 1);
      return;
    }
    collective_->reduce_ranges(sends_, recvs_, parts_, timeout_, wire_);
    if (!accumulate_) return;
  }
  for (size_t r = 0; r < k; ++r) {
    if (part_length(r) == 0) continue;
    if (accumulate_)
      kernels_[r]->accumulate(own(r, b), slot_pointers_[r] + part(r), part_length(r));
    else
      kernels_[r]->copy_device(own(r, b), slot_pointers_[r] + part(r), part_length(r));
  }
}

void CudaShardedGradientCollective::reduce_between_phases(bool) {
  world_seconds_ = 0;
  if (world_ == nullptr) return;
  const double start = platform::now_seconds();
  const size_t k = kernels_.size();
  for (size_t r = 0; r < k; ++r)
    if (shards_.size(r) > 0)
      kernels_[r]->copy_to_host(host_.data() + shards_.begin(r), shard_gradients_[r], shards_.size(r));
  for (size_t r = 0; r < k; ++r) kernels_[r]->synchronize();
  world_->all_reduce(host_.data(), host_.size(), timeout_, wire_);
  for (size_t r = 0; r < k; ++r)
    if (shards_.size(r) > 0)
      kernels_[r]->copy_to_device(shard_gradients_[r], host_.data() + shards_.begin(r), shards_.size(r));
  for (size_t r = 0; r < k; ++r) kernels_[r]->synchronize();
  world_seconds_ = platform::now_seconds() - start;
}

BackwardHook CudaShardedGradientCollective::backward_hook(size_t rank) {
  BackwardHook hook{&layer_done, &lanes_[rank]};
  hook.gradients = &gradients;
  if (!tied_.empty()) hook.tied_gradients = &tied_gradients;
  return hook;
}

// A probe writes the staging bucket over and over; the next micro-batch starts its lanes afresh.
BackwardHook CudaShardedGradientCollective::probe_hook(size_t rank) {
  lanes_[rank].opened = lanes_[rank].reduced = 0;
  lanes_[rank].probe = true;
  if (!tied_.empty()) tied_grads_[rank].zero();
  return backward_hook(rank);
}

// Buckets that backward did not reach (an empty or non-finite slice skips it) contribute zeros, reduced in
// turn with the peers'.
void CudaShardedGradientCollective::finish_backward(size_t rank) {
  Lane &lane = lanes_[rank];
  while (lane.reduced < buckets_.size()) {
    while (lane.opened <= lane.reduced) open_next(lane);
    reduce(rank, lane.reduced++);
  }
  if (!overlap_) return;
  // Replica 0 waits for the started reduces; a later micro-batch then adds the last bucket's sums.
  local_.barrier(rank);
  if (rank == 0) {
    const double wait = platform::now_seconds();
    collective_->wait_started(timeout_);
    if (accumulate_) add_sums(buckets_.size() - 1);
    const double end = platform::now_seconds();
    wait_seconds_ += end - wait;
    span_seconds_ += end - first_start_;
  }
  local_.barrier(rank);  // every replica's stream is ordered after the sums
}

void CudaShardedGradientCollective::gather_between_phases(const std::vector<size_t> &bounds) {
  collective_->all_gather(params_, bounds, timeout_);
}

// A reduce-scatter of the gradient, as NCCL's tests count it: its bytes times (K - 1) / K, K every rank.
CudaShardedGradientCollective::RankReduction CudaShardedGradientCollective::rank_reduction(size_t rank,
                                                                                           bool) const {
  const double k = double(collective_->ranks());
  return {seconds_[rank], double(shards_.count()) * sizeof(float) * (k - 1.0) / k};
}

}  // namespace dpt
