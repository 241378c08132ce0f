// A trainer whose replicas are the stages of a pipeline (TrainerConfig::pipeline_stages): each stage's part
// of a pass (parallel/pipeline.hpp), its collectives, the gathers of a sharded optimizer, the mirrors of a
// parameter tied across stages, and the collective reads of stages divided among the processes. The plan
// is trainer_pipeline_plan.cpp's.
#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.hpp"
#include "parallel/statistics_reducer.hpp"
#include "parallel/trainer.hpp"

namespace dpt {

// Every process's stages' range (of the parameters or the running statistics) goes from it to every process:
// one broadcast per process, rooted there, in place.
void Trainer::share_stages_across_world(float *vector, bool buffers) const {
  const World &world = *config_.world;
  try {
    for (size_t p = 0; p < world.size(); ++p) {
      const ProcessStages &stages = process_stages_[p];
      const size_t begin = buffers ? stages.buffer_begin : stages.param_begin,
                   end = buffers ? stages.buffer_end : stages.param_end;
      if (end > begin)
        world.broadcast(vector + begin, (end - begin) * sizeof(float), p, config_.timeout_seconds);
    }
  } catch (const Error &) {
    broken_ = true;  // the processes are out of step
    throw;
  }
}

// Update phase, device thread rank, a sharded optimizer: the stage's replicas in this process all-gather
// the ranges they updated; in the world scope device 0's thread then copies every process's part of every
// stage to every process (one broadcast per process and stage, rooted at the owner, into the stage's first
// replica: one thread calls MPI), and the stage's other replicas copy the other processes' parts from it.
void Trainer::gather_stage(size_t rank) {
  const size_t width = pipeline_->replicas_per_stage(), s = rank / width;
  ThreadCollective &stage = group_->subgroup(s);
  float *params = replicas_[rank]->params.data();
  if (!stage_state_across_processes()) {
    stage.all_gather(rank % width, params, stage_bounds_[s].data());
    return;
  }
  // Every process's replicas of the stage (or every copy's, the stages divided among the processes).
  const World &world = stages_across_processes() ? *stage_world_ : *config_.world;
  stage.all_gather(rank % width, params, stage_bounds_[s].data() + stage_replica_offset(world.rank()));
  ThreadCollective &local = group_->collective();
  local.barrier(rank);  // every stage's first replica holds this process's parts
  if (rank == 0)
    for (size_t t = 0; t < stages_.size(); ++t)
      for (size_t p = 0; p < world.size(); ++p) {
        const auto [begin, end] = stage_span(t, p);
        if (end > begin)
          world.broadcast(replicas_[t * width]->params.data() + begin, (end - begin) * sizeof(float), p,
                          config_.timeout_seconds);
      }
  local.barrier(rank);
  for (size_t p = 0; p < world.size(); ++p) {
    const auto [begin, end] = stage_span(s, p);
    if (p != world.rank() && end > begin) stage.broadcast(rank % width, params + begin, end - begin, 0);
  }
}

size_t Trainer::stage_replica_offset(size_t p) const {
  if (stages_across_processes()) return p * (devices_.size() / stages_.size());  // copy p's first part
  return process_first_[p] / stages_.size();
}

std::pair<size_t, size_t> Trainer::stage_span(size_t s, size_t p) const {
  return {stage_bounds_[s][stage_replica_offset(p)], stage_bounds_[s][stage_replica_offset(p + 1)]};
}

std::vector<std::vector<size_t>> Trainer::stage_process_spans() const {
  std::vector<std::vector<size_t>> spans;
  if (!stage_state_across_processes() || stage_bounds_.empty()) return spans;
  const size_t sharing = stages_across_processes() ? stage_world_->size() : config_.world->size();
  for (size_t s = 0; s < stages_.size(); ++s) {
    spans.emplace_back();
    for (size_t p = 0; p <= sharing; ++p) spans.back().push_back(stage_bounds_[s][stage_replica_offset(p)]);
  }
  return spans;
}

// The optimizer sharded among the stage's replicas of this process alone (no other process shares the
// stages' sums: no world, or stages divided among the processes without copies), or among each process's
// replicas of a stage that other processes hold too (the process scope: the sums over the processes go by
// stage_pieces_): each stage's replicas' parts, for their reduce-scatter.
std::vector<std::vector<size_t>> Trainer::stage_replica_parts() const {
  const bool alone = config_.world == nullptr || config_.world->size() == 1 ||
                     (stages_across_processes() && stage_world_ == nullptr);
  return alone || !stage_pieces_.empty() ? stage_bounds_ : std::vector<std::vector<size_t>>{};
}

std::vector<size_t> Trainer::stage_lengths() const {
  std::vector<size_t> lengths;
  for (const PipelineStage &s : stages_) lengths.push_back(s.param_end - s.param_begin);
  return lengths;
}

// After the replicas (the stages' first activation contexts) exist: the pipeline, and with several
// replicas per stage the stages' collectives (batch statistics, gradients) among them.
void Trainer::start_pipeline(size_t width) {
  PipelineNeighbours neighbours;
  if (stages_across_processes()) {
    neighbours = {config_.world, first_stage_, config_.pipeline_stages, config_.timeout_seconds,
                  stage_copies_};
    neighbours.host_staging = on_gpus_;  // MPI reads and writes host memory only
  }
  pipeline_ = std::make_unique<Pipeline>(stages_, replicas_, width, config_.micro_batches,
                                         config_.pipeline_schedule, config_.matmul_dtype,
                                         config_.activation_dtype, group_->aborted(), neighbours);
  size_t largest_mirror = remote_ties_.largest();  // a GPU adds a received gradient from its own memory
  mirrored_ = !remote_ties_.empty();
  for (const PipelineStage &s : stages_) {
    mirrored_ = mirrored_ || s.mirror_floats > 0;
    largest_mirror = std::max(largest_mirror, s.mirror_floats);
  }
  // GPUs add a mirror's gradient from a copy in their own memory (add_mirror_gradients).
  if (on_gpus_ && mirrored_)
    for (size_t rank = 0; rank < replicas_.size(); ++rank)
      mirror_scratch_.emplace_back(replicas_[rank]->kernels->memory(), largest_mirror);
  const bool statistics = std::any_of(replicas_.begin(), replicas_.end(),
                                      [](const auto &r) { return r->network.has_statistics(); });
  // Across processes a stage's batch statistics are summed over the processes too, by the stage's device
  // threads, which run the stages' micro-batches at their own pace: each stage sums on an MPI channel of
  // its own (its sums come in the same order on every process, the stages' orders differ). Stages divided
  // among the processes: the processes holding copies of this process's stages.
  const World *world = stages_across_processes() ? stage_world_ : config_.world;
  if (world != nullptr && statistics) world->reserve_pooled_channels(stages_.size());
  if (width == 1 && (world == nullptr || (!statistics && stage_bounds_.empty()))) return;
  group_->enable_subgroups(stages_.size());
  for (size_t s = 0; s < stages_.size(); ++s)
    if (replicas_[s * width]->network.has_statistics())
      stage_statistics_.push_back(std::make_unique<HostStatisticsReducer>(
          group_->subgroup(s), world != nullptr ? &world->pooled_channel(s) : nullptr,
          config_.timeout_seconds));
    else
      stage_statistics_.push_back(nullptr);
}

size_t Trainer::owner_of(size_t offset, size_t rank) const {
  const size_t width = pipeline_->replicas_per_stage();
  size_t s = 0;
  while (stages_[s].param_end <= offset) ++s;
  return s * width + rank % width;
}

// Every stage's gradient is complete (its replicas all-reduced it) once every device has arrived; the
// source's replica r then adds replica r's mirror gradient of each stage tied to it, elementwise, before any
// device computes the norm (whose all-reduce keeps the mirrors' stages from zeroing them before).
void Trainer::add_mirror_gradients(size_t rank) {
  group_->collective().barrier(rank);
  const size_t width = pipeline_->replicas_per_stage();
  for (size_t t = 0; t < stages_.size(); ++t) {
    const PipelineStage &tied = stages_[t];
    if (tied.mirror_floats == 0 || !source_here(tied) || owner_of(tied.mirror_source, rank) != rank) continue;
    const Replica &mirror = *replicas_[t * width + rank % width];
    Replica &r = *replicas_[rank];
    const float *from = mirror.grads.data() + (tied.param_end - tied.param_begin);
    float *to = r.grads.data() + (tied.mirror_source - stage_begin(rank));
    if (on_gpus_) {  // a GPU adds what is in its own memory: the mirror's gradient comes by a peer copy
      r.kernels->copy_device(mirror_scratch_[rank].data(), from, tied.mirror_floats);
      from = mirror_scratch_[rank].data();
    }
    r.kernels->accumulate(to, from, tied.mirror_floats);
    // Done before the mirror's stage zeroes its gradient after the update (a GPU's copy is queued).
    r.kernels->synchronize();
  }
  // The ties with an end in another process (after this process's: their mirrors are later stages).
  Replica &r = *replicas_[rank];
  if (!remote_ties_.empty())
    remote_ties_.exchange_gradients(rank, rank / width, rank % width, *r.kernels, r.grads.data(),
                                    on_gpus_ ? mirror_scratch_[rank].data() : nullptr);
}

// After every device's update: each mirror copies the source's new values.
void Trainer::refresh_mirrors(size_t rank) {
  replicas_[rank]->kernels->synchronize();  // a GPU's update is queued: done before the mirrors read it
  group_->collective().barrier(rank);
  copy_mirror(rank);
  if (!remote_ties_.empty()) {
    const size_t width = pipeline_->replicas_per_stage();
    remote_ties_.exchange_values(rank, rank / width, rank % width, *replicas_[rank]->kernels,
                                 replicas_[rank]->params.data());
  }
}

void Trainer::copy_mirror(size_t rank) {
  const PipelineStage &stage = pipeline_->stage_of(rank);
  if (stage.mirror_floats == 0 || !source_here(stage)) return;
  const size_t source = owner_of(stage.mirror_source, rank);
  const float *from = replicas_[source]->params.data() + (stage.mirror_source - stage_begin(source));
  // From the source's device (a GPU peer copy), into this one's.
  replicas_[rank]->kernels->copy_device(
      replicas_[rank]->params.data() + (stage.param_end - stage.param_begin), from, stage.mirror_floats);
  replicas_[rank]->kernels->synchronize();
}

void Trainer::run_stage(size_t rank, bool overlap) {
  Replica &r = *replicas_[rank];
  PassInfo info = pass_info(0, pending_samples_, optimizer_steps_, true, rank);
  // Batch statistics are summed among the stage's replicas (one replica: its micro-batch is the batch).
  const size_t width = pipeline_->replicas_per_stage();
  info.rank = rank % width;
  info.statistics = stage_statistics_.empty() ? nullptr : stage_statistics_[rank / width].get();
  r.stats = pipeline_->train(rank, info, r.params.data(), r.grads.data(), r.buffers.data(),
                             overlap ? collective_->backward_hook(rank) : BackwardHook{});
  r.compute_seconds = pipeline_->busy_seconds(rank);
  // The rest of the stages run on: their peers wait for every micro-batch. The window is discarded whole.
  if (!std::isfinite(r.stats.loss_sum)) r.nonfinite = true;
}

void Trainer::infer_stage(size_t rank, bool with_labels) {
  Replica &r = *replicas_[rank];
  r.stats =
      pipeline_->infer(rank, pass_info(0, 0, 0, false, rank), r.params.data(), r.buffers.data(), with_labels);
}

}  // namespace dpt
