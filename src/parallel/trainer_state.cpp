// A trainer's state from and to the host: parameters, their checksum, and the checkpointed state, always
// from the caller's thread between phases.
#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "core/checksum.hpp"
#include "core/error.hpp"
#include "parallel/trainer.hpp"

namespace dpt {

void Trainer::require_replica(size_t replica) const {
  DPT_REQUIRE(replica < replicas_.size(), DPT_ERROR_OUT_OF_RANGE,
              "replica " + std::to_string(replica) + " does not exist (the trainer has " +
                  std::to_string(replicas_.size()) + ")");
}

// From the caller's thread, between phases (the work mutex keeps the device workers off the replica).
void Trainer::copy_to_host(size_t replica, const DeviceBuffer &buffer, float *out, size_t count) const {
  check_no_task_out();
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  DeviceKernels &k = *replicas_[replica]->kernels;
  k.copy_to_host(out, buffer.data(), count == SIZE_MAX ? buffer.size() : count);
  k.synchronize();
}

void Trainer::get_parameters(size_t replica, float *out) const {
  require_replica(replica);
  if (!ranged_parameters()) {
    copy_to_host(replica, replicas_[replica]->params, out);
    return;
  }
  // Sharded parameters: every range from its owner (across processes too).
  if (gatherer_ != nullptr) {
    check_no_task_out();
    std::lock_guard<std::mutex> lock(context_->work_mutex());
    gatherer_->owners().copy_to_host(out, 0, parameter_count());
    return;
  }
  // Pipeline stages: every range, from the replica's peers (replica r of every stage); every replica sees
  // the same whole vector.
  const size_t width = pipeline_->replicas_per_stage();
  for (size_t rank = 0; rank < replicas_.size(); ++rank)
    if (stage_size(rank) > 0 && rank % width == replica % width)
      copy_to_host(rank, replicas_[rank]->params, out + stage_begin(rank), stage_size(rank));
  if (stages_across_processes()) share_stages_across_world(out, false);  // the other processes' stages
}

void Trainer::set_parameters(const float *in) {
  check_no_task_out();
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  set_parameters_locked(in);
}

// Each replica's parameters: all of them, or (sharded parameters, a pipeline stage) its range.
void Trainer::set_parameters_locked(const float *in) {
  for (size_t rank = 0; rank < replicas_.size(); ++rank) {
    Replica &r = *replicas_[rank];
    if (!ranged_parameters()) {
      r.kernels->copy_to_device(r.params.data(), in, r.params.size());
      continue;
    }
    if (pipeline_ == nullptr) {
      r.kernels->copy_to_device(r.params.data(), in + shards_.begin(rank), shards_.size(rank));
      continue;
    }
    r.kernels->copy_to_device(r.params.data(), in + stage_begin(rank), stage_size(rank));
    // A pipeline stage's mirror of a tied parameter: the source's values.
    if (r.params.size() > stage_size(rank)) {
      const PipelineStage &s = pipeline_->stage_of(rank);
      r.kernels->copy_to_device(r.params.data() + stage_size(rank), in + s.mirror_source, s.mirror_floats);
    }
  }
  for (auto &r : replicas_) r->kernels->synchronize();
  if (gatherer_ != nullptr) publish_parameters();
}

// Sharded parameters across processes: after this process wrote its ranges, before anybody reads them
// (collective; a failure leaves the processes out of step).
void Trainer::publish_parameters() {
  try {
    gatherer_->owners().publish();
  } catch (const Error &) {
    broken_ = true;
    throw;
  }
}

// Each replica's running statistics: all of them, or (a pipeline stage) its range.
void Trainer::set_buffers_locked(const float *in) {
  for (size_t rank = 0; rank < replicas_.size(); ++rank) {
    Replica &r = *replicas_[rank];
    r.kernels->copy_to_device(r.buffers.data(), in + buffer_begin(rank), r.buffers.size());
  }
  for (auto &r : replicas_) r->kernels->synchronize();
}

void Trainer::get_buffers(size_t replica, float *out) const {
  require_replica(replica);
  if (pipeline_ == nullptr) {
    copy_to_host(replica, replicas_[replica]->buffers, out);
    return;
  }
  for (size_t rank = 0; rank < replicas_.size(); ++rank)
    if (replicas_[rank]->buffers.size() > 0)
      copy_to_host(rank, replicas_[rank]->buffers, out + buffer_begin(rank));
  if (stages_across_processes()) share_stages_across_world(out, true);
}

void Trainer::set_buffers(const float *in) {
  check_no_task_out();
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  set_buffers_locked(in);
}

// The optimizer state is state_floats_per_parameter arrays of one float per parameter, one after the
// other (AdamW: m, then v): a shard holds each array's range.
void Trainer::unshard_state(size_t rank, const float *shard, float *whole) const {
  const size_t n = shards_.size(rank), count = shards_.count();
  for (size_t a = 0; a < state_floats_per_parameter(config_.optimizer); ++a)
    std::copy(shard + a * n, shard + (a + 1) * n, whole + a * count + shards_.begin(rank));
}

void Trainer::reshard_state(size_t rank, const float *whole, float *shard) const {
  const size_t n = shards_.size(rank), count = shards_.count();
  for (size_t a = 0; a < state_floats_per_parameter(config_.optimizer); ++a) {
    const float *from = whole + a * count + shards_.begin(rank);
    std::copy(from, from + n, shard + a * n);
  }
}

ReplicaTimes Trainer::replica_times(size_t replica) const {
  require_replica(replica);
  return replica < replica_times_.size() ? replica_times_[replica] : ReplicaTimes{};
}

ReplicaTimes Trainer::replica_totals(size_t replica) const {
  require_replica(replica);
  return replica < replica_totals_.size() ? replica_totals_[replica] : ReplicaTimes{};
}

ReplicaMemory Trainer::replica_memory(size_t replica) const {
  require_replica(replica);
  const Replica &r = *replicas_[replica];
  ReplicaMemory m;
  m.parameters =
      r.params.size() * sizeof(float) + (gatherer_ != nullptr ? gatherer_->slot_bytes(replica) : 0);
  m.gradients = r.grads.size() * sizeof(float) + collective_->staging_bytes(replica);
  m.optimizer_state = r.state.size() * sizeof(float);
  m.buffers = r.buffers.size() * sizeof(float);
  m.activations = pipeline_ != nullptr ? pipeline_->allocated_bytes(replica) : r.network.allocated_bytes();
  return m;
}

uint64_t Trainer::parameter_checksum() const {
  std::vector<float> p(parameter_count());
  get_parameters(0, p.data());
  return fnv1a64(p.data(), p.size() * sizeof(float));
}

TrainerState Trainer::save_state() const {
  check_usable();
  DPT_REQUIRE(pending_micro_ == 0, DPT_ERROR_INVALID_STATE,
              "cannot checkpoint inside an accumulation window (" + std::to_string(pending_micro_) + " of " +
                  std::to_string(config_.accumulation_steps) + " micro-batches done)");
  TrainerState state;
  state.parameters.resize(parameter_count());
  state.optimizer_state.resize(parameter_count() * state_floats_per_parameter(config_.optimizer));
  state.buffers.resize(spec_.buffer_count());
  get_parameters(0, state.parameters.data());
  get_buffers(0, state.buffers.data());
  // The optimizer state of every shard into the unsharded layout (a checkpoint does not depend on the
  // device count or the sharding).
  std::vector<float> shard;
  for (size_t rank = 0; rank < replicas_.size() && !state.optimizer_state.empty(); ++rank) {
    if (shards_.size(rank) == 0) continue;
    shard.resize(replicas_[rank]->state.size());
    copy_to_host(rank, replicas_[rank]->state, shard.data());
    unshard_state(rank, shard.data(), state.optimizer_state.data());
    if (!shards_.sharded()) break;
  }
  if (world_shards() && !state.optimizer_state.empty())
    share_state_across_world(state.optimizer_state.data());
  state.optimizer_steps = optimizer_steps_;
  state.epochs_done = epochs_done;
  state.samples_into_epoch = samples_into_epoch;
  state.seed = config_.seed;
  if (scaler_.enabled()) {
    state.loss_scale = scaler_.scale();
    state.loss_scale_growth_tracker = scaler_.growth_tracker();
  }
  return state;
}

void Trainer::load_state(const TrainerState &state) {
  check_usable();
  DPT_REQUIRE(state.parameters.size() == parameter_count(), DPT_ERROR_INVALID_ARGUMENT,
              "the checkpoint has " + std::to_string(state.parameters.size()) + " parameters, the model " +
                  std::to_string(parameter_count()));
  const size_t state_floats = parameter_count() * state_floats_per_parameter(config_.optimizer);
  DPT_REQUIRE(state.optimizer_state.size() == state_floats, DPT_ERROR_INVALID_ARGUMENT,
              "the checkpoint has " + std::to_string(state.optimizer_state.size()) +
                  " floats of optimizer state, the trainer's optimizer needs " +
                  std::to_string(state_floats));
  DPT_REQUIRE(state.buffers.size() == spec_.buffer_count(), DPT_ERROR_INVALID_ARGUMENT,
              "the checkpoint has " + std::to_string(state.buffers.size()) +
                  " floats of running statistics, the model " + std::to_string(spec_.buffer_count()));
  // Each replica's shard of the optimizer state, staged on the host until the copies are done.
  std::vector<std::vector<float>> shards(replicas_.size());
  for (size_t rank = 0; rank < replicas_.size(); ++rank) {
    shards[rank].resize(replicas_[rank]->state.size());
    if (!shards[rank].empty()) reshard_state(rank, state.optimizer_state.data(), shards[rank].data());
  }
  std::lock_guard<std::mutex> lock(context_->work_mutex());
  set_parameters_locked(state.parameters.data());
  set_buffers_locked(state.buffers.data());
  for (size_t rank = 0; rank < replicas_.size(); ++rank) {
    Replica &r = *replicas_[rank];
    r.kernels->copy_to_device(r.state.data(), shards[rank].data(), r.state.size());
    r.grads.zero();
  }
  for (auto &r : replicas_) r->kernels->synchronize();
  optimizer_steps_ = state.optimizer_steps;
  epochs_done = state.epochs_done;
  samples_into_epoch = state.samples_into_epoch;
  config_.seed = state.seed;
  if (scaler_.enabled() && state.loss_scale != 0)
    scaler_.restore(state.loss_scale, state.loss_scale_growth_tracker);
  pending_micro_ = 0;
  pending_samples_ = 0;
  pending_targets_ = 0;
}

}  // namespace dpt
