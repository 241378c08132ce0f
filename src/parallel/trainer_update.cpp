// The end of an accumulation window: the update phase (the gradient reduction where it has not run during
// backward, the norm, clipping, the optimizer step on the range each replica owns, the all-gather of a
// sharded optimizer), the windows dropped for non-finite values or overflow, and each replica's times.
#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.hpp"
#include "core/platform.hpp"
#include "parallel/trainer.hpp"

namespace dpt {

// A NaN or an infinity: the whole accumulation window is dropped (gradients zeroed on every replica),
// parameters and optimizer state stay as they were, and the policy decides whether the caller hears of it
// as an error.
void Trainer::drop_window() {
  run_phase([this](size_t rank) { replicas_[rank]->grads.zero(); });
  pending_micro_ = 0;
  pending_samples_ = 0;
  pending_targets_ = 0;
}

void Trainer::discard_window(StepStats &s) {
  drop_window();
  ++nonfinite_steps_;
  s.applied = false;
  s.skipped_nonfinite = true;
}

// The scaled gradient overflowed: as GradScaler, skip the window and halve the scale. Every replica (and
// process) saw the same all-reduced gradient, so all decide alike.
void Trainer::skip_overflow(StepStats &s) {
  drop_window();
  ++overflow_steps_;
  scaler_.overflowed();
  s.applied = false;
  s.skipped_overflow = true;
}

void Trainer::report_discarded(const char *where) const {
  DPT_REQUIRE(!config_.error_on_nonfinite, DPT_ERROR_NON_FINITE,
              std::string("a NaN or infinity in ") + where + " of this batch; the update was skipped (" +
                  std::to_string(nonfinite_steps_) + " so far)");
}

// All-reduces the summed gradients, divides by the counted targets of the window (the samples, for a
// classifier without ignored labels; 0 targets: the gradient is 0) and by the loss multiplier, clips, and
// applies the same optimizer step on every replica. Nothing in here allocates or can fail (but a 16-bit
// all-reduce across processes stages its values once). Returns false, changing nothing, when the
// gradients are not finite (every replica sees the same all-reduced norm, so all agree).
bool Trainer::update_replicas(StepStats &s, bool reduced) {
  const double t0 = platform::now_seconds();
  s.learning_rate = learning_rate_at(config_.optimizer, optimizer_steps_);
  const float lr = float(s.learning_rate);
  // The loss multiplier is a power of two: dividing by it is exact (and a no-op without loss scaling).
  const double inv_samples = pending_targets_ > 0 ? 1.0 / double(pending_targets_) / loss_multiplier_ : 0.0;
  try {
    collective_->reduce_between_phases(reduced);
  } catch (const Error &) {
    broken_ = true;  // the replicas' gradients (and a NCCL communicator) are in an unknown state
    throw;
  }
  // Sharded optimizer state, whole parameters on every replica: the ranges are all-gathered.
  const bool gather = shards_.sharded() && !ranged_parameters();
  // A pipeline on GPUs whose stages shard their optimizer: the parts are gathered after the phase, from
  // this thread (as a data-parallel GPU trainer's ranges), and the mirrors refreshed after that.
  const bool gather_stages_here = on_gpus_ && !stage_bounds_.empty();
  run_phase([this, reduced, lr, inv_samples, gather, gather_stages_here](size_t rank) {
    Replica &r = *replicas_[rank];
    collective_->reduce_in_update(rank, reduced);
    const double start = platform::now_seconds();
    if (mirrored_) add_mirror_gradients(rank);  // a pipeline's parameter tied across stages
    // Every replica now holds the same summed gradient (sharded: the same sums in the range it owns), so
    // each computes the same norm and, on what it owns, the same update.
    r.norm = global_norm(rank) * inv_samples;
    if (!std::isfinite(r.norm)) return;
    double scale = inv_samples;
    const double clip = config_.optimizer.clip_norm;
    if (clip > 0.0 && r.norm > clip) scale *= clip / (r.norm + 1e-6);  // as PyTorch's clip_grad_norm_
    apply_grouped_update(*r.kernels, config_.optimizer, decayed_, optimizer_steps_, lr, float(scale),
                         owned_parameters(rank), owned_gradients(rank), r.state.data(), shards_.begin(rank),
                         shards_.end(rank));
    if (!stage_bounds_.empty() && !gather_stages_here) gather_stage(rank);
    if (gather && !on_gpus_) {
      if (world_shards())
        gather_across_world(rank);
      else
        group_->collective().all_gather(rank, r.params.data(), shards_.bounds().data());
    }
    if (mirrored_ && !gather_stages_here) refresh_mirrors(rank);
    // Sharded parameters on GPUs: the peers' next pass copies this range on their own streams. (Every pass
    // also starts after copy_in drained each stream; this keeps the order without relying on that.)
    if (gatherer_ != nullptr && on_gpus_) r.kernels->synchronize();
    r.update_seconds = platform::now_seconds() - start;
    trace_->record(TraceRecorder::compute_row(rank), TraceKind::kUpdate, 0, start, platform::now_seconds());
    r.grads.zero();
  });
  // Sharded parameters across processes: the others read this process's ranges in the next pass.
  if (gatherer_ != nullptr) publish_parameters();
  const double grad_norm = replicas_[0]->norm;
  if (!std::isfinite(grad_norm)) return false;
  if ((gather && on_gpus_) || gather_stages_here) {
    const double start = platform::now_seconds();
    try {
      collective_->gather_between_phases(shards_.bounds());
      if (gather_stages_here && mirrored_)
        for (size_t rank = 0; rank < replicas_.size(); ++rank) copy_mirror(rank);
    } catch (const Error &) {
      broken_ = true;  // the replicas' parameters differ
      throw;
    }
    // Every replica's stream took part in the copies: each replica's update includes them, as a CPU
    // device's includes its all-gather.
    const double gathered = platform::now_seconds() - start;
    for (auto &r : replicas_) r->update_seconds += gathered;
  }
  const AllReduceTimes times = collective_->times(reduced);
  s.applied = true;
  s.grad_norm = grad_norm;
  s.update_seconds = platform::now_seconds() - t0 - times.in_update;
  s.allreduce_seconds = times.total;
  s.allreduce_exposed_seconds = times.exposed;
  last_lr_ = s.learning_rate;
  ++optimizer_steps_;
  scaler_.finite_window();
  pending_micro_ = 0;
  pending_samples_ = 0;
  pending_targets_ = 0;
  return true;
}

// The norm of the summed gradient, on device thread rank. Sharded, each rank has the sums of its own range
// only: it computes that range's norm block sums (on its device: the kernels' l2_block_sums, l2_norm's bits
// block by block on CPU devices and GPUs alike) and the ranks add their block arrays in rank order. ZeRO's
// ranges are cut at whole blocks (each block non-zero on one rank only, so the sums are exact): the blocks,
// added in block order as l2_norm adds them, give the unsharded norm bit for bit. A pipeline's stages are
// cut at nodes: a block two stages share is the sum of their parts (the same on every rank, but not
// l2_norm's bits).
double Trainer::global_norm(size_t rank) {
  Replica &r = *replicas_[rank];
  // The gradient whole on every rank: not sharded, or (GPUs) only the optimizer state sharded and the
  // gradient all-reduced whole.
  if (!shards_.sharded() || (on_gpus_ && pipeline_ == nullptr && !collective_->reduces_every_micro_batch() &&
                             collective_->sums_whole()))
    return r.kernels->l2_norm(r.grads.data(), r.grads.size());
  std::vector<double> &blocks = norm_blocks_[rank];
  std::fill(blocks.begin(), blocks.end(), 0.0);
  // Replicas of a pipeline stage hold the same sums: the first of them counts them.
  if (shards_.first_owner(rank))
    r.kernels->l2_block_sums(owned_gradients(rank), shards_.begin(rank), shards_.end(rank),
                             blocks.data() + shards_.begin(rank) / kNormBlock);
  ThreadCollective &local = group_->collective();
  local.all_reduce_doubles(rank, blocks.data(), blocks.size());
  // Sharded across every process's devices: the processes' blocks too (each block is non-zero in one).
  if (world_shards()) {
    if (rank == 0) {
      // Stages divided among the processes: a stage's copies hold the same sums; the first counts them.
      // (Unless the copies shard the stage's optimizer state: each then counts its own parts.)
      if (data_rank_ != 0 && !state_over_copies_) std::fill(blocks.begin(), blocks.end(), 0.0);
      config_.world->all_reduce(blocks.data(), blocks.size(), config_.timeout_seconds);
    }
    local.broadcast(rank, reinterpret_cast<float *>(blocks.data()), 2 * blocks.size(), 0);
  }
  return l2_norm_of_blocks(blocks.data(), blocks.size());
}

float *Trainer::owned_parameters(size_t rank) {
  float *params = replicas_[rank]->params.data();
  if (pipeline_ != nullptr) return params + (shards_.begin(rank) - stage_begin(rank));
  return gatherer_ != nullptr ? params : params + shards_.begin(rank);
}

float *Trainer::owned_gradients(size_t rank) {
  float *grads = replicas_[rank]->grads.data();
  // A pipeline stage's buffer holds the stage's range; a sharded gradient buffer the owned range first.
  if (pipeline_ != nullptr) return grads + (shards_.begin(rank) - stage_begin(rank));
  const bool ranged = replicas_[rank]->grads.size() != spec_.parameter_count();
  return ranged ? grads : grads + shards_.begin(rank);
}

void Trainer::record_replica_times(double total_seconds, bool reduced, bool overlapped) {
  replica_times_.resize(replicas_.size());
  replica_totals_.resize(replicas_.size());
  reduction_totals_.resize(replicas_.size());
  for (size_t rank = 0; rank < replicas_.size(); ++rank) {
    const Replica &r = *replicas_[rank];
    ReplicaTimes &t = replica_times_[rank];
    t = ReplicaTimes{r.compute_seconds, 0, r.update_seconds, 0, 0};
    double beside = 0;  // of the communication, what ran beside the compute
    if (reduced && replicas_.size() > 1) {
      const GradientCollective::RankReduction reduction = collective_->rank_reduction(rank, overlapped);
      t.communication = reduction.seconds;
      beside = reduction.beside;
      t.bus_bandwidth = reduction.seconds > 0 ? reduction.bus_bytes / reduction.seconds : 0;
      if (reduction.seconds > 0)
        reduction_totals_[rank].bus_bytes += reduction.bus_bytes,
            reduction_totals_[rank].seconds += reduction.seconds;
    }
    // A pipeline stage's hand-overs (its activations and gradients copied across its boundaries).
    if (pipeline_ != nullptr) t.communication += pipeline_->transfer_seconds(rank);
    // An overlapped reduction ran on the communication thread, beside the compute (a pipeline stage's ran
    // after its schedule, on its own thread: busy, but for its buckets started during its last backward).
    const double busy =
        t.compute + t.update + (overlapped && pipeline_ == nullptr ? 0 : t.communication - beside);
    t.idle = std::max(0.0, total_seconds - busy);
    ReplicaTimes &sum = replica_totals_[rank];
    sum.compute += t.compute, sum.communication += t.communication, sum.update += t.update,
        sum.idle += t.idle;
    const ReductionTotals &reduced = reduction_totals_[rank];
    sum.bus_bandwidth = reduced.seconds > 0 ? reduced.bus_bytes / reduced.seconds : 0;
  }
}

}  // namespace dpt
