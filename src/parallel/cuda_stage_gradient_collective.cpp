#include "parallel/cuda_stage_gradient_collective.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/platform.hpp"
#include "parallel/process_deliveries.hpp"

namespace dpt {

CudaStageGradientCollective::CudaStageGradientCollective(
    DeviceGroup &group, const std::vector<std::unique_ptr<Replica>> &replicas, size_t replicas_per_stage,
    const World *world, double timeout_seconds, WireType wire, std::vector<std::vector<size_t>> parts,
    const std::vector<std::vector<GradientBucket>> &buckets, TraceRecorder &trace,
    const std::vector<ProcessRoutes> &routes)
    : timeout_(timeout_seconds),
      wire_(wire),
      width_(replicas_per_stage),
      parts_(std::move(parts)),
      group_(group),
      trace_(trace),
      lanes_(replicas.size()) {
  for (size_t rank = 0; rank < lanes_.size(); ++rank) lanes_[rank].owner = this, lanes_[rank].rank = rank;
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
  reduce_parts_.resize(stages_.size());
  deliveries_.resize(stages_.size());
  for (size_t s = 0; s < stages_.size(); ++s) {
    if (stages_[s]->shares_one_gpu()) continue;
    if (!routes.empty()) {
      const ProcessRoutes &r = routes[s];
      DPT_REQUIRE(r.reduce_bounds.size() == ranks_ + 1 && r.first_rank + width_ < r.reduce_bounds.size() &&
                      r.reduce_bounds.back() <= floats_[s],
                  DPT_ERROR_INTERNAL, "a stage's process-scope routes do not fit its communicator");
      reduce_parts_[s] = r.reduce_bounds;
      first_rank_ = r.first_rank;
      deliveries_[s] = deliveries_within(r.messages, grads_[s]);
    } else if (!parts_.empty() && parts_[s].size() == ranks_ + 1) {
      reduce_parts_[s] = parts_[s];
    }
  }
  starts_.assign(stages_.size(), 0.0);
  waits_.assign(stages_.size(), 0.0);
  ends_.assign(stages_.size(), 0.0);
  sends_.resize(stages_.size());
  recvs_.resize(stages_.size());
  ranges_.assign(stages_.size(), {{0, 0}});
  // In buckets: several of them, covering the whole buffer (a cross-stage tie's mirror included), among GPUs
  // of their own.
  bucket_parts_.resize(stages_.size());
  bucket_deliveries_.resize(stages_.size());
  buckets_.resize(stages_.size());
  lowest_layer_.resize(stages_.size());
  bucket_starts_.resize(stages_.size());
  for (size_t s = 0; s < stages_.size() && s < buckets.size(); ++s) {
    const std::vector<GradientBucket> &b = buckets[s];
    if (b.size() < 2 || b.front().end != floats_[s] || stages_[s]->shares_one_gpu()) continue;
    // A 16-bit wire's staging, which a start may not grow once others hold it: sized for the whole stage
    // now, by its reduction (of zero gradients, which stay zero).
    if (wire_ != WireType::kF32) reduce_stage(s);
    if (reduces_to_owners(s)) {
      bucket_parts_[s].resize(reduce_parts_[s].size());
      sends_[s].resize(width_);
      recvs_[s].resize(width_);
    }
    for (const GradientBucket &bucket : b) {
      buckets_[s].emplace_back(bucket.begin, bucket.end);
      lowest_layer_[s].push_back(bucket.lowest_layer);
    }
    // The process scope: each bucket's part of the stage's messages, started right after its reduce.
    for (size_t k = 0; !deliveries_[s].empty() && k < b.size(); ++k)
      bucket_deliveries_[s].push_back(deliveries_within(routes[s].messages, grads_[s], b[k].begin, b[k].end));
    bucket_starts_[s].assign(b.size(), 0.0);
  }
}

void CudaStageGradientCollective::start_micro_batch(bool, bool) {
  for (Lane &lane : lanes_) lane.started = 0;
}

BackwardHook CudaStageGradientCollective::backward_hook(size_t rank) {
  if (stages_.empty() || buckets_[rank / width_].empty()) return {};
  return BackwardHook{&layer_done, &lanes_[rank]};
}

void CudaStageGradientCollective::layer_done(void *context, size_t node) {
  Lane &lane = *static_cast<Lane *>(context);
  CudaStageGradientCollective &self = *lane.owner;
  const size_t s = lane.rank / self.width_;
  while (lane.started < self.buckets_[s].size() && node <= self.lowest_layer_[s][lane.started])
    self.start(lane.rank, lane.started++);
}

void CudaStageGradientCollective::start(size_t rank, size_t bucket) {
  const size_t s = rank / width_, member = rank % width_;
  ThreadCollective *stage = width_ > 1 ? &group_.subgroup(s) : nullptr;
  if (stage != nullptr) stage->barrier(member);  // every replica of the stage has queued the bucket
  if (member == 0) {
    bucket_starts_[s][bucket] = platform::now_seconds();
    if (bucket == 0) starts_[s] = bucket_starts_[s][bucket];
    start_bucket(s, buckets_[s][bucket].first, buckets_[s][bucket].second);
    if (!bucket_deliveries_[s].empty()) stages_[s]->start_exchange(bucket_deliveries_[s][bucket]);
  }
  if (stage != nullptr) stage->barrier(member);  // the first replica is done with the stage's contexts
}

// Stage s's gradient [begin, end) started: all-reduced, or (reduced to the parts' owners) its part of the
// range sent to each owner and its part of the mirror all-reduced.
void CudaStageGradientCollective::start_bucket(size_t s, size_t begin, size_t end) {
  const size_t range = reduces_to_owners(s) ? reduce_parts_[s].back() : begin;
  if (begin < range) {
    const size_t hi = std::min(end, range);
    std::vector<size_t> &parts = bucket_parts_[s];
    for (size_t g = 0; g < parts.size(); ++g) parts[g] = std::clamp(reduce_parts_[s][g], begin, hi) - begin;
    for (size_t r = 0; r < width_; ++r) {
      const size_t g = first_rank_ + r;
      sends_[s][r] = grads_[s][r] + begin;
      recvs_[s][r] = parts[g + 1] > parts[g] ? grads_[s][r] + begin + parts[g] : nullptr;  // (in place)
    }
    stages_[s]->start_reduce_ranges(sends_[s], recvs_[s], parts, wire_);
  }
  if (end <= range) return;
  ranges_[s][0] = {std::max(begin, range), end};
  stages_[s]->start_all_reduce(grads_[s], ranges_[s], wire_);
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
  const bool in_buckets = !buckets_[s].empty();
  // Buckets that backward did not reach (a slice that skipped backward) are started here, so that the
  // stage's peers' buckets complete.
  for (Lane &lane = lanes_[rank]; in_buckets && lane.started < buckets_[s].size();)
    start(rank, lane.started++);
  // (One replica per stage in each process: no stage barrier, and the trainer makes no subgroups then.)
  ThreadCollective *stage = width_ > 1 ? &group_.subgroup(s) : nullptr;
  if (stage != nullptr) stage->barrier(member);  // every replica of the stage has queued its last backward
  if (member == 0) {
    if (in_buckets) {
      waits_[s] = platform::now_seconds();
      stages_[s]->wait_started(timeout_);  // (the process scope's deliveries too: started per bucket)
    } else {
      starts_[s] = platform::now_seconds();
      reduce_stage(s);
    }
    ends_[s] = platform::now_seconds();
    // The timeline: each bucket from its start to the end of the wait.
    for (size_t b = 0; in_buckets && b < bucket_starts_[s].size(); ++b)
      trace_.record(TraceRecorder::communication_row(rank),
                    reduces_to_owners(s) ? TraceKind::kBucketReduceScatter : TraceKind::kBucketAllReduce, b,
                    bucket_starts_[s][b], ends_[s]);
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
  const std::vector<size_t> &parts = reduce_parts_[s];
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
  deliver(s);
}

void CudaStageGradientCollective::deliver(size_t s) {
  if (!deliveries_[s].empty()) stages_[s]->exchange(deliveries_[s], timeout_);
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
  // In buckets: until the wait began, the reduction ran beside the stage's last backward.
  const double beside = reduced && !buckets_[s].empty() ? waits_[s] - starts_[s] : 0;
  if (!reduces_to_owners(s)) return {seconds, all * 2.0 * (r - 1.0) / r, beside};
  const double range = double(reduce_parts_[s].back()) * sizeof(float);
  // The process scope's deliveries: what a replica sends, on average over the job (half of this process's
  // sends and receives, which balance over the job).
  double delivered = 0;
  for (const dpt_backend_message &m : deliveries_[s]) delivered += double(m.count) * sizeof(float);
  return {seconds,
          range * (r - 1.0) / r + (all - range) * 2.0 * (r - 1.0) / r + delivered / (2.0 * double(width_)),
          beside};
}

}  // namespace dpt
