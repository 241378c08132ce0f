#include "parallel/host_gradient_collective.hpp"

#include <algorithm>
#include <utility>

#include "comm/hierarchical_reduce.hpp"
#include "core/platform.hpp"
#include "parallel/gradient_buckets.hpp"

namespace dpt {

HostGradientCollective::HostGradientCollective(DeviceGroup &group,
                                               const std::vector<std::unique_ptr<Replica>> &replicas,
                                               const ModelSpec &spec, size_t bucket_bytes,
                                               AllReduceAlgorithm algorithm, const World *world,
                                               double timeout_seconds, WireType wire,
                                               const ShardLayout &shards, std::vector<size_t> process_spans,
                                               std::vector<ShardPiece> process_pieces, TraceRecorder &trace)
    : group_(group),
      world_(world),
      bucket_world_(world != nullptr ? &world->channel(WorldChannel::kBuckets) : nullptr),
      algorithm_(algorithm),
      wire_(wire),
      timeout_(timeout_seconds),
      shards_(shards),
      trace_(trace),
      count_(replicas[0]->grads.size()),
      posters_(replicas.size()),
      seconds_(replicas.size(), 0.0),
      spans_(std::move(process_spans)),
      pieces_(std::move(process_pieces)) {
  for (auto &r : replicas) grads_.push_back(r->grads.data());
  to_first_.assign(replicas.size() + 1, count_);
  to_first_[0] = 0;
  // Overlap needs a second bucket: with one, the reduction could only start after backward anyway, and
  // the plain all-reduce on the device threads saves the hand-over to the communication threads.
  // Across processes the reducer also runs the MPI all-reduce of each bucket, so one device is enough.
  if ((replicas.size() > 1 || world != nullptr) && bucket_bytes > 0) {
    std::vector<GradientBucket> buckets = plan_buckets(spec, bucket_bytes);
    if (buckets.size() > 1) {
      // Each bucket reduced in place (reduce_range), across processes too.
      group_.enable_bucket_reducer(std::move(buckets), [this](ThreadCollective &c, size_t rank, size_t b) {
        const GradientBucket &bucket = reducer_->buckets()[b];
        const double start = platform::now_seconds();
        const double seconds = reduce_range(c, bucket_world_, rank, bucket.begin, bucket.end);
        trace_.record(TraceRecorder::communication_row(rank),
                      scatters() ? TraceKind::kBucketReduceScatter : TraceKind::kBucketAllReduce, b, start,
                      platform::now_seconds());
        return seconds;
      });
    }
  }
  reducer_ = group_.bucket_reducer();
  for (size_t rank = 0; rank < posters_.size(); ++rank) {
    posters_[rank].reducer = reducer_;
    posters_[rank].rank = rank;
  }
}

double HostGradientCollective::sum_range(ThreadCollective &local, const World *world, size_t rank,
                                         size_t begin, size_t end) {
  if (spans_.empty())
    return hierarchical_all_reduce(local, world, rank, grads_[rank], begin, end, algorithm_, timeout_, wire_);
  return hierarchical_reduce_scatter(local, *world, rank, grads_[rank], begin, end, spans_.data(),
                                     to_first_.data(), algorithm_, timeout_, wire_);
}

double HostGradientCollective::sum_pieces_across_processes(ThreadCollective &local, const World *world,
                                                           size_t rank, size_t begin, size_t end) {
  const double start = platform::now_seconds();
  if (rank == 0)
    for (const ShardPiece &p : pieces_) {
      const size_t lo = std::max(p.begin, begin), hi = std::min(p.end, end);
      if (lo < hi) world->all_reduce(grads_[p.owner] + lo, hi - lo, timeout_, wire_);
    }
  local.barrier(rank);  // no owner reads its sums before they are summed over the processes
  return platform::now_seconds() - start;
}

// In place within the process: a bucket by ring chunks (reduce_scatter_range), the whole vector by owner
// (each rank its own range: even ranges, and each rank writes its own buffer only).
double HostGradientCollective::reduce_range(ThreadCollective &local, const World *world, size_t rank,
                                            size_t begin, size_t end) {
  if (!scatters() && !by_pieces()) return sum_range(local, world, rank, begin, end);
  double seconds = 0;
  if (scatters())
    seconds = begin == 0 && end == count_
                  ? local.reduce_scatter(rank, grads_[rank], shards_.bounds().data(), algorithm_, wire_)
                  : local.reduce_scatter_range(rank, grads_[rank], begin, end, shards_.bounds().data(),
                                               algorithm_, wire_);
  if (by_pieces()) seconds += sum_pieces_across_processes(local, world, rank, begin, end);
  return seconds;
}

void HostGradientCollective::Poster::layer_done(void *context, size_t layer) {
  Poster &p = *static_cast<Poster *>(context);
  const std::vector<GradientBucket> &buckets = p.reducer->buckets();
  size_t n = p.posted;
  while (n < buckets.size() && layer <= buckets[n].lowest_layer) ++n;
  if (n == p.posted) return;
  p.posted = n;
  p.reducer->post(p.rank, n);
}

BackwardHook HostGradientCollective::backward_hook(size_t rank) {
  Poster &p = posters_[rank];
  p.posted = 0;
  return BackwardHook{&Poster::layer_done, &p};
}

void HostGradientCollective::finish_backward(size_t rank) {
  reducer_->post(rank, reducer_->buckets().size());
  reducer_->wait_all(rank);
}

void HostGradientCollective::reduce_in_update(size_t rank, bool reduced) {
  seconds_[rank] = 0;
  if (reduced) return;  // the bucket reducer did it during backward
  // Across processes the whole sum is all-reduced, or reduce-scattered by process spans (the World's
  // collectives run on rank 0's thread), or (the optimizer sharded in each process) each device's range
  // summed over the processes: the ranks then update their ranges of it.
  const double start = platform::now_seconds();
  const bool scatter = scatters();
  seconds_[rank] = reduce_range(group_.collective(), world_, rank, 0, count_);
  trace_.record(TraceRecorder::compute_row(rank), scatter ? TraceKind::kReduceScatter : TraceKind::kAllReduce,
                0, start, platform::now_seconds());
}

AllReduceTimes HostGradientCollective::times(bool reduced) const {
  if (reduced) return {0, reducer_->reduce_seconds(0), reducer_->exposed_seconds(0)};
  return {seconds_[0], seconds_[0], seconds_[0]};
}

// A trainer whose optimizer is sharded among its process's devices reduce-scatters within the process
// (whole or in buckets); everything else all-reduces. Across processes the seconds include the sums over
// the processes, the bytes count the process's part (for the all-reduce too).
HostGradientCollective::RankReduction HostGradientCollective::rank_reduction(size_t rank,
                                                                             bool reduced) const {
  const double k = double(grads_.size()), bytes = double(count_) * sizeof(float);
  return {reduced ? reducer_->reduce_seconds(rank) : seconds_[rank],
          bytes * (scatters() ? 1.0 : 2.0) * (k - 1.0) / k};
}

}  // namespace dpt
