#include "parallel/sharded_gradient_collective.hpp"

#include <algorithm>
#include <utility>

#include "core/platform.hpp"
#include "parallel/gradient_buckets.hpp"

namespace dpt {

ShardedGradientCollective::ShardedGradientCollective(
    DeviceGroup &group, const std::vector<std::unique_ptr<Replica>> &replicas, const ModelSpec &spec,
    size_t bucket_bytes, AllReduceAlgorithm algorithm, WireType wire, const ShardLayout &shards,
    const World *world, std::vector<ShardPiece> process_pieces, std::vector<size_t> process_spans,
    double timeout_seconds, TraceRecorder &trace)
    : group_(group),
      shards_(shards),
      world_(world),
      bucket_world_(world != nullptr ? &world->channel(WorldChannel::kBuckets) : nullptr),
      timeout_(timeout_seconds),
      trace_(trace),
      algorithm_(algorithm),
      wire_(wire),
      slots_(replicas.size()),
      tied_(spec),
      pieces_(std::move(process_pieces)),
      spans_(std::move(process_spans)),
      bounds_(shards.sharded() ? shards.bounds() : std::vector<size_t>{0, shards.count()}),
      lanes_(replicas.size()),
      buckets_(plan_buckets(spec, bucket_bytes)) {
  bucket_of_node_ = bucket_of_nodes(spec, buckets_);
  for (const TiedSources::Source &s : tied_.sources()) {
    size_t b = 0;
    while (!(s.offset >= buckets_[b].begin && s.offset < buckets_[b].end)) ++b;
    tied_bucket_.push_back(b);
  }
  for (const Node &node : spec.nodes()) node_offsets_.push_back(node.param_offset);
  const size_t largest = largest_bucket(buckets_);
  // Two slots let backward fill one bucket while the previous one is reduced.
  const size_t slots = std::min<size_t>(2, buckets_.size());
  for (size_t rank = 0; rank < replicas.size(); ++rank) {
    for (size_t s = 0; s < slots; ++s) slots_[rank].emplace_back(replicas[rank]->kernels->memory(), largest);
    if (!tied_.empty()) tied_grads_.emplace_back(replicas[rank]->kernels->memory(), tied_.floats());
    shard_gradients_.push_back(replicas[rank]->grads.data());
    lanes_[rank].owner = this;
    lanes_[rank].rank = rank;
  }
  if (!spans_.empty()) {
    const size_t k = replicas.size();
    for (const GradientBucket &b : buckets_) {
      std::vector<size_t> split;
      for (size_t r = 0; r <= k; ++r) split.push_back(b.begin + r * (b.end - b.begin) / k);
      bucket_splits_.push_back(std::move(split));
    }
    if (k > 1) sum_.emplace_back(replicas[0]->kernels->memory(), largest);
  }
  group.enable_bucket_reducer(
      buckets_, [this](ThreadCollective &c, size_t rank, size_t bucket) { return reduce(c, rank, bucket); });
  reducer_ = group.bucket_reducer();
}

// Every lane starts the micro-batch afresh: a rank whose slice is empty never asks for a hook, and its
// buckets must still be opened (zeroed) before they are posted.
void ShardedGradientCollective::start_micro_batch(bool first_of_window, bool last_of_window) {
  accumulate_ = !first_of_window;
  sum_across_ = world_ != nullptr && spans_.empty() && last_of_window;
  for (Lane &lane : lanes_) lane.opened = lane.posted = 0, lane.probe = false;
  for (DeviceBuffer &t : tied_grads_) std::fill_n(t.data(), t.size(), 0.0f);
}

double ShardedGradientCollective::reduce(ThreadCollective &collective, size_t rank, size_t bucket) {
  const GradientBucket &b = buckets_[bucket];
  const double start = platform::now_seconds();
  if (spans_.empty()) {
    collective.reduce_scatter_bucket(rank, slot(rank, bucket), b.begin, b.end, bounds_.data(),
                                     shard_gradients_[rank], accumulate_, algorithm_, wire_);
    if (sum_across_) sum_bucket_across_processes(collective, rank, bucket);
  } else {
    reduce_across_world(collective, rank, bucket);
  }
  const double seconds = platform::now_seconds() - start;
  trace_.record(TraceRecorder::communication_row(rank), TraceKind::kBucketReduceScatter, bucket, start,
                platform::now_seconds());
  return seconds;
}

void ShardedGradientCollective::reduce_across_world(ThreadCollective &collective, size_t rank,
                                                    size_t bucket) {
  const GradientBucket &b = buckets_[bucket];
  const size_t *split = bucket_splits_[bucket].data();
  float *sum = sum_.empty() ? slot(rank, bucket) : sum_[0].data();
  // Each device sums its part of the bucket over the process's devices (in the ring's order) into the sum;
  // the call ends when every part is in.
  collective.reduce_scatter_bucket(rank, slot(rank, bucket), b.begin, b.end, split,
                                   sum + (split[rank] - b.begin), false, algorithm_, wire_);
  if (rank == 0) bucket_world_->reduce_scatter(sum, b.begin, b.end, spans_.data(), timeout_, wire_);
  collective.barrier(rank);  // this process's span of the bucket holds the sums over the job
  const size_t lo = std::max(b.begin, shards_.begin(rank)), hi = std::min(b.end, shards_.end(rank));
  if (lo < hi) {
    const float *from = sum + (lo - b.begin);
    float *to = shard_gradients_[rank] + (lo - shards_.begin(rank));
    if (accumulate_)
      for (size_t i = 0; i < hi - lo; ++i) to[i] += from[i];
    else
      std::copy(from, from + (hi - lo), to);
  }
  collective.barrier(rank);  // every device has its range before the next bucket's sum is written
}

void ShardedGradientCollective::open_next(Lane &lane) {
  const size_t bucket = lane.opened;
  const size_t reuse = slots_[lane.rank].size();
  if (!lane.probe && bucket >= reuse) reducer_->wait_reduced(lane.rank, bucket - reuse + 1);
  float *s = slot(lane.rank, bucket);
  std::fill_n(s, buckets_[bucket].end - buckets_[bucket].begin, 0.0f);
  // The tying nodes' contributions to the sources in this bucket, where backward would have added them.
  for (size_t i = 0; i < tied_bucket_.size(); ++i)
    if (tied_bucket_[i] == bucket) {
      const TiedSources::Source &src = tied_.sources()[i];
      std::copy_n(tied_grads_[lane.rank].data() + src.packed, src.count,
                  s + (src.offset - buckets_[bucket].begin));
    }
  ++lane.opened;
}

float *ShardedGradientCollective::gradients(void *context, size_t node) {
  Lane &lane = *static_cast<Lane *>(context);
  ShardedGradientCollective &self = *lane.owner;
  const size_t bucket = self.bucket_of_node_[node];
  while (lane.opened <= bucket) self.open_next(lane);
  // The node's first parameter, at its place in the bucket (the node's gradients are contiguous).
  return self.slot(lane.rank, bucket) + (self.node_offsets_[node] - self.buckets_[bucket].begin);
}

// The source's bucket comes at or after the tying node's in backward: open (the same bucket) or not yet.
float *ShardedGradientCollective::tied_gradients(void *context, size_t, size_t offset) {
  Lane &lane = *static_cast<Lane *>(context);
  ShardedGradientCollective &self = *lane.owner;
  const size_t i = self.tied_.index(offset), bucket = self.tied_bucket_[i];
  if (bucket < lane.opened) return self.slot(lane.rank, bucket) + (offset - self.buckets_[bucket].begin);
  return self.tied_grads_[lane.rank].data() + self.tied_.sources()[i].packed;
}

void ShardedGradientCollective::layer_done(void *context, size_t node) {
  Lane &lane = *static_cast<Lane *>(context);
  ShardedGradientCollective &self = *lane.owner;
  size_t n = lane.posted;
  while (n < self.buckets_.size() && node <= self.buckets_[n].lowest_layer) ++n;
  if (n == lane.posted || lane.probe) return;
  lane.posted = n;
  self.reducer_->post(lane.rank, n);
}

BackwardHook ShardedGradientCollective::backward_hook(size_t rank) {
  Lane &lane = lanes_[rank];
  BackwardHook hook{&layer_done, &lane};
  hook.gradients = &gradients;
  if (!tied_.empty()) hook.tied_gradients = &tied_gradients;
  return hook;
}

// A probe writes the slots over and over (nothing waits for a reduction); the next micro-batch starts its
// lanes afresh.
BackwardHook ShardedGradientCollective::probe_hook(size_t rank) {
  lanes_[rank].opened = lanes_[rank].posted = 0;
  lanes_[rank].probe = true;
  if (!tied_.empty()) std::fill_n(tied_grads_[rank].data(), tied_grads_[rank].size(), 0.0f);
  return backward_hook(rank);
}

// Buckets that backward did not reach (an empty or non-finite slice skips it) contribute zeros: each is
// opened (zeroed) and posted in turn, so that the slot waits see the peers' reductions go on.
void ShardedGradientCollective::finish_backward(size_t rank) {
  Lane &lane = lanes_[rank];
  while (lane.opened < buckets_.size()) {
    if (lane.posted < lane.opened) reducer_->post(rank, lane.posted = lane.opened);
    open_next(lane);
  }
  reducer_->post(rank, buckets_.size());
  reducer_->wait_all(rank);
}

// The cuts of every process's ranges (ShardLayout depends on the parameter count and the device count
// only, so each process knows every other's), and for each piece between two cuts the rank here whose
// shard holds it. Equal device counts: the ranges themselves.
// The bucket's part of every range holds the sum over this process's devices of the window's micro-batches;
// the sum over the processes follows, piece by piece in offset order on every process (so the MPI calls
// match). With two processes every element's sum has two terms, so the ranges get the bits of
// DPT_SHARD_NONE's whole all-reduce; 16-bit wires sum each element in process order whatever the piece.
void ShardedGradientCollective::sum_bucket_across_processes(ThreadCollective &collective, size_t rank,
                                                            size_t bucket) {
  const GradientBucket &b = buckets_[bucket];
  // (reduce_scatter_bucket ended at a barrier: every rank's sums of the bucket are in its range.)
  if (rank == 0)
    for (const ShardPiece &p : pieces_) {
      const size_t lo = std::max(p.begin, b.begin), hi = std::min(p.end, b.end);
      if (lo < hi)
        bucket_world_->all_reduce(shard_gradients_[p.owner] + (lo - shards_.begin(p.owner)), hi - lo,
                                  timeout_, wire_);
    }
  collective.barrier(rank);  // the sums are in before any rank reads its range
}

AllReduceTimes ShardedGradientCollective::times(bool) const {
  return {0, reducer_->reduce_seconds(0), reducer_->exposed_seconds(0)};
}

// The reduce-scatter within the process, and across P processes the all-reduce of the rank's range (the
// process scope), or device 0's reduce-scatter of the whole gradient (the world scope).
ShardedGradientCollective::RankReduction ShardedGradientCollective::rank_reduction(size_t rank, bool) const {
  const double k = double(lanes_.size()), bytes = double(shards_.count()) * sizeof(float);
  const double p = world_ != nullptr ? double(world_->size()) : 1.0;
  const double across = spans_.empty() ? double(shards_.size(rank)) * sizeof(float) * 2.0
                        : rank == 0    ? bytes
                                       : 0.0;
  return {reducer_->reduce_seconds(rank), bytes * (k - 1.0) / k + across * (p - 1.0) / p};
}

uint64_t ShardedGradientCollective::staging_bytes(size_t rank) const {
  uint64_t floats = 0;
  for (const DeviceBuffer &s : slots_[rank]) floats += s.size();
  if (rank == 0 && !sum_.empty()) floats += sum_[0].size();
  if (!tied_.empty()) floats += tied_grads_[rank].size();
  return floats * sizeof(float);
}

}  // namespace dpt
