#include "parallel/stage_gradient_collective.hpp"

#include <algorithm>

#include "core/platform.hpp"

namespace dpt {

void StageGradientCollective::finish_backward(size_t rank) {
  const double start = platform::now_seconds();
  reduce_within_stage(rank);
  finished_[rank] = {start, platform::now_seconds()};
  trace_.record(TraceRecorder::compute_row(rank),
                replica_parts_.empty() ? TraceKind::kAllReduce : TraceKind::kReduceScatter, 0, start,
                finished_[rank].end);
}

void StageGradientCollective::reduce_in_update(size_t rank, bool reduced) {
  seconds_[rank] = 0;
  if (!reduced) finished_[rank] = {};
  if (width_ == 1 && world_ == nullptr) return;
  if (reduced && world_ == nullptr) return;  // (finish_backward reduced within the stage)
  DeviceBuffer &grads = replicas_[rank]->grads;
  const double start = platform::now_seconds();
  if (width_ > 1 && !reduced) reduce_within_stage(rank);
  if (world_ != nullptr) {
    ThreadCollective &local = group_.collective();
    local.barrier(rank);  // every stage's replicas hold the process's sum
    if (rank == 0)
      for (size_t s = 0; s < replicas_.size() / width_; ++s) reduce_across_processes(s);
    local.barrier(rank);  // the sums over the processes are in
    if (rank % width_ != 0) {
      // The stage's sums (the world scope: this process's part of the range, and the mirror; the process
      // scope, pieces: each replica's part is summed in place, the mirror only).
      const float *sum = replicas_[rank - rank % width_]->grads.data();
      const size_t s = rank / width_;
      const size_t begin = !pieces_.empty() ? stage_floats_[s]
                           : spans_.empty() ? 0
                                            : spans_[s][world_->rank()];
      const size_t end = !pieces_.empty() || spans_.empty() ? grads.size() : spans_[s][world_->rank() + 1];
      std::copy(sum + begin, sum + end, grads.data() + begin);
      if (!spans_.empty())
        std::copy(sum + stage_floats_[s], sum + grads.size(), grads.data() + stage_floats_[s]);
    }
  }
  seconds_[rank] = platform::now_seconds() - start;
  trace_.record(TraceRecorder::compute_row(rank),
                replica_parts_.empty() ? TraceKind::kAllReduce : TraceKind::kReduceScatter, 0, start,
                platform::now_seconds());
}

void StageGradientCollective::reduce_within_stage(size_t rank) const {
  DeviceBuffer &grads = replicas_[rank]->grads;
  ThreadCollective &stage = group_.subgroup(rank / width_);
  if (replica_parts_.empty()) {
    stage.all_reduce(rank % width_, grads.data(), grads.size(), algorithm_, wire_);
    return;
  }
  const size_t s = rank / width_, range = stage_floats_[s];
  stage.reduce_scatter(rank % width_, grads.data(), replica_parts_[s].data(), algorithm_, wire_);
  if (grads.size() > range)  // the mirror of a tied parameter: every replica adds it to the source
    stage.all_reduce_range(rank % width_, grads.data(), range, grads.size(), algorithm_, wire_);
}

void StageGradientCollective::reduce_across_processes(size_t s) const {
  DeviceBuffer &grads = replicas_[s * width_]->grads;
  const size_t range = stage_floats_[s];
  if (!pieces_.empty()) {  // each replica's part in place, then the mirror
    for (const ShardPiece &p : pieces_[s])
      world_->all_reduce(replicas_[s * width_ + p.owner]->grads.data() + p.begin, p.end - p.begin, timeout_,
                         wire_);
    if (grads.size() > range) world_->all_reduce(grads.data() + range, grads.size() - range, timeout_, wire_);
    return;
  }
  if (spans_.empty()) {
    world_->all_reduce(grads.data(), grads.size(), timeout_, wire_);
    return;
  }
  world_->reduce_scatter(grads.data(), 0, range, spans_[s].data(), timeout_, wire_);
  if (grads.size() > range) world_->all_reduce(grads.data() + range, grads.size() - range, timeout_, wire_);
}

// The stages reduce at once, each its own range: the step waited for the slowest. Reduced after their
// schedules, the stages' reductions overlap the others' drain: the step waited for the one that started
// last (the stage that finished last), and for the update phase's part.
AllReduceTimes StageGradientCollective::times(bool reduced) const {
  const double in_update = *std::max_element(seconds_.begin(), seconds_.end());
  if (!reduced) return {in_update, in_update, in_update};
  double longest = 0;
  Span last;
  for (const Span &f : finished_) {
    longest = std::max(longest, f.end - f.start);
    if (f.start > last.start) last = f;
  }
  return {in_update, longest + in_update, last.end - last.start + in_update};
}

// The stage's all-reduce (reduce-scatter, the mirror all-reduced) among its replicas; across P processes
// device 0 also all-reduces (the world scope: reduce-scatters) every stage's range (the whole gradient) over
// them.
StageGradientCollective::RankReduction StageGradientCollective::rank_reduction(size_t rank, bool) const {
  const double k = double(width_), bytes = double(replicas_[rank]->grads.size()) * sizeof(float);
  double moved = 0;
  if (width_ > 1 && replica_parts_.empty()) moved = bytes * 2.0 * (k - 1.0) / k;
  if (width_ > 1 && !replica_parts_.empty()) {
    const double range = double(stage_floats_[rank / width_]) * sizeof(float);
    moved = range * (k - 1.0) / k + (bytes - range) * 2.0 * (k - 1.0) / k;
  }
  if (world_ != nullptr && rank == 0) {
    double whole = 0;
    for (size_t first = 0; first < replicas_.size(); first += width_)
      whole += double(replicas_[first]->grads.size()) * sizeof(float);
    // An all-reduce moves 2 (P - 1) / P of the bytes, a reduce-scatter half of that.
    const double p = double(world_->size());
    moved += whole * (spans_.empty() ? 2.0 : 1.0) * (p - 1.0) / p;
  }
  return {finished_[rank].end - finished_[rank].start + seconds_[rank], moved};
}

}  // namespace dpt
